// SPDX-License-Identifier: MIT
//! libzvmm from a Rust VMM, without KVM: guest memory opened under a
//! policy, prepared, a "loader" writing boot data and a device tree at
//! the top of RAM through vm-memory, vCPU threads touching every page
//! (a VMM gives `guest.memory()` to KVM instead), then stop, exit and
//! the statistics.
//!
//!   vmm [prezero|demand|hybrid] [MiB] [POOL_FILE]
//!
//! The hugepages must be reserved (echo 64 > /proc/sys/vm/nr_hugepages);
//! demand and hybrid need a userfaultfd (root, or /dev/userfaultfd).

use std::sync::Arc;

use vm_memory::{Bytes, GuestAddress};
use zvmm::vm_memory_adapter::ZvmmMemory;
use zvmm::{Guest, LogLevel, Mem, Policy, PAGE_2M};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("hybrid", |s| s.as_str());
    let mib: u64 = args.get(2).map_or(Ok(64), |s| s.parse())?;
    zvmm::set_log(LogLevel::Warning, |level, msg| {
        eprintln!("libzvmm {:?}: {}", level, msg)
    });
    println!("libzvmm {} (bindings of {})", zvmm::version(), zvmm::header_version());

    let mut mem = Mem::new(mib << 20, PAGE_2M);
    if let Some(pool) = args.get(3) {
        mem = mem.pool(pool);
    }
    let policy = Policy::new()?.with("zeroing.mode", mode)?;
    let guest = Arc::new(Guest::open(&mem, Some(&policy))?);
    drop(policy);

    // The loader's first page is made zero by prepare itself.
    guest.prepare(PAGE_2M)?;
    let ram = ZvmmMemory::new(Arc::clone(&guest))?;
    ram.write_slice(b"boot data", GuestAddress(0))?;
    // Beyond prepare's boot bytes: access() first, the library's rule.
    let dtb = GuestAddress(guest.len() - 4096);
    ram.access(dtb, 4096)?;
    ram.write_obj(0xd00d_feedu32.to_be(), dtb)?;

    guest.serve_thread()?;
    guest.start()?;
    let (addr, bytes) = guest.memory();
    let page = guest.page_bytes() as usize;
    // A raw pointer is no Send: the threads get the address as a number,
    // as a VMM's vCPU threads get it through KVM.
    let base = addr as usize;
    let vcpus: Vec<_> = (0..2)
        .map(|cpu| {
            std::thread::spawn(move || {
                let mut nonzero = 0;
                for off in (cpu * page..bytes as usize).step_by(2 * page) {
                    // A vCPU's first touch: served by the library.
                    let p = (base + off + 64) as *mut u8;
                    unsafe {
                        if p.read_volatile() != 0 {
                            nonzero += 1;
                        }
                        p.write_volatile(0xa5);
                    }
                }
                nonzero
            })
        })
        .collect();
    let nonzero: usize = vcpus.into_iter().map(|t| t.join().unwrap()).sum();
    guest.stop()?;
    guest.exit()?;
    let stats = guest.stats()?;
    println!(
        "{}: {} pages read non-zero; backend {}, {} faults, {} pages scrubbed for them",
        stats.mode(),
        nonzero,
        stats.backend(),
        stats.faults,
        stats.fault_scrubbed_pages
    );
    drop(ram);
    // The last Arc: zvmm_guest_close().
    drop(guest);
    if nonzero != 0 {
        return Err("a vCPU read another tenant's data".into());
    }
    Ok(())
}
