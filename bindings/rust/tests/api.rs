// SPDX-License-Identifier: MIT
//! The safe wrapper's calls that need no hugepages: versions, policies,
//! errors carrying the library's errno, backends; then the order rules
//! the wrapper enforces, on an anonymous memfd guest (skipped without
//! hugepages).

#[macro_use]
mod common;

use common::*;
use zvmm::{Guest, Mem, Policy, PAGE_2M};

#[test]
fn versions_agree() {
    zvmm::check_version().unwrap();
    assert_eq!(zvmm::header_version(), "0.3.0");
    let lib: Vec<u32> = zvmm::version().split('.').map(|s| s.parse().unwrap()).collect();
    assert_eq!(lib.len(), 3, "{}", zvmm::version());
    assert_eq!(lib[0], zvmm::sys::ZVMM_VERSION_MAJOR);
    assert!(lib[1] >= zvmm::sys::ZVMM_VERSION_MINOR);
}

#[test]
fn policy_sets_formats_and_loads() {
    capture_log();
    let mut p = Policy::new().unwrap();
    p.set("zeroing.mode", "demand").unwrap();
    p.set("pool.on_exit", "scrub").unwrap();
    let text = p.format().unwrap();
    assert!(text.contains("demand"), "{}", text);
    assert!(text.contains("scrub"), "{}", text);

    let e = p.set("zeroing.nonsense", "1").unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    // The reason went to the log, in words that name the key.
    assert!(!logged("unknown key 'nonsense'").is_empty(), "the log did not name the key");
    assert_eq!(e.call(), "zvmm_policy_set");
    assert_eq!(std::io::Error::from(e).raw_os_error(), Some(libc::EINVAL));
    assert_eq!(p.set("zeroing.mode", "sometimes").unwrap_err().code(), -libc::EINVAL);
    // A NUL would cut the value short: refused before the library.
    assert_eq!(p.set("zeroing.mode", "demand\0x").unwrap_err().errno(), libc::EINVAL);
    assert_eq!(p.format().unwrap(), text, "a refused set changed the policy");

    // What format() writes loads back the same.
    let dir = TempDir::new("/tmp/zvmm-test-rust-policy-").unwrap();
    let file = dir.0.join("zvmm.conf");
    std::fs::write(&file, &text).unwrap();
    let mut q = Policy::new().unwrap();
    q.load(&file).unwrap();
    assert_eq!(q.format().unwrap(), text);
    assert_eq!(q.load(dir.0.join("missing.conf")).unwrap_err().errno(), libc::ENOENT);
}

#[test]
fn mem_errors_come_back_as_errno() {
    capture_log();
    // Not a multiple of the page size.
    let e = Mem::new(PAGE_2M + 4096, PAGE_2M).check().unwrap_err();
    assert!(e.code() < 0);
    assert_eq!(e.call(), "zvmm_mem_check");
    let e = Guest::open(&Mem::new(3 << 20, PAGE_2M), None).unwrap_err();
    assert_eq!(e.call(), "zvmm_guest_open");
    // A pool path with a NUL inside: refused before the library.
    let mem = Mem::new(64 << 20, PAGE_2M).pool("/tmp/a\0b");
    assert_eq!(mem.check().unwrap_err().errno(), libc::EINVAL);
    assert_eq!(Guest::open(&mem, None).unwrap_err().errno(), libc::EINVAL);
    // A pool on a file system that is no hugetlbfs.
    let dir = TempDir::new("/tmp/zvmm-test-rust-mem-").unwrap();
    let e = Mem::new(64 << 20, PAGE_2M).pool(dir.0.join("pool")).check().unwrap_err();
    assert!(e.code() < 0, "{}", e);
}

#[test]
fn backends_and_arch() {
    let backends = zvmm::backends().unwrap();
    assert!(!backends.is_empty());
    assert!(backends.iter().any(|b| b.runs_here), "{:?}", backends);
    assert!(backends.iter().all(|b| !b.name.is_empty() && !b.what.is_empty()));
    assert!(["x86-64", "arm64"].contains(&zvmm::arch()), "{}", zvmm::arch());
    let _ = zvmm::cpu_features();
}

/// access() and the vm-memory adapter before prepare are refused, as
/// the header's rule says; after it the adapter covers the mapping.
#[test]
fn order_rules_on_a_memfd_guest() {
    let test = "order rules on a memfd guest";
    capture_log();
    let _one = hugepages_lock();
    if let Err(why) = need_2m_hugepages(8) {
        skip!(test, "{}", why);
    }
    let pol = Policy::new().unwrap().with("zeroing.mode", "prezero").unwrap();
    let guest = Guest::open(&Mem::new(8 * PAGE_2M, PAGE_2M), Some(&pol)).unwrap();
    drop(pol);
    assert!(!guest.is_prepared());
    assert_eq!(guest.access(0, 1).unwrap_err().errno(), libc::EINVAL);
    assert_eq!(guest.len(), 8 * PAGE_2M);
    let layout = guest.layout();
    assert_eq!(layout.bytes, 8 * PAGE_2M);
    assert_eq!(layout.page_bytes, PAGE_2M);
    assert_eq!(layout.addr, guest.memory().0);

    #[cfg(feature = "vm-memory")]
    {
        use vm_memory::{Bytes, GuestAddress, GuestMemory};
        use zvmm::vm_memory_adapter::ZvmmMemory;
        assert_eq!(ZvmmMemory::new(&guest).unwrap_err().errno(), libc::EINVAL);
        guest.prepare(PAGE_2M).unwrap();
        assert_eq!(guest.prepare(PAGE_2M).unwrap_err().errno(), libc::EALREADY);
        let ram = ZvmmMemory::new(&guest).unwrap();
        assert_eq!(ram.num_regions(), 1);
        assert_eq!(ram.last_addr(), GuestAddress(8 * PAGE_2M - 1));
        assert_eq!(ram.access(GuestAddress(8 * PAGE_2M), 1).unwrap_err().errno(), libc::EINVAL);
        ram.access(GuestAddress(8 * PAGE_2M - 1), 1).unwrap();
        assert_eq!(ram.read_obj::<u8>(GuestAddress(8 * PAGE_2M - 1)).unwrap(), 0);
        assert!(ram.read_obj::<u16>(GuestAddress(8 * PAGE_2M - 1)).is_err());
        // With the guest's file, for a vhost-user frontend.
        let shared = ZvmmMemory::with_file(&guest).unwrap();
        let region = shared.find_region(GuestAddress(0)).unwrap();
        assert!(vm_memory::GuestMemoryRegion::file_offset(region).is_some());
    }
    guest.start().unwrap();
    // prezero has nothing to serve.
    assert!(guest.fd().is_none());
    guest.serve_thread().unwrap();
    guest.stop().unwrap();
    guest.exit().unwrap();
    let json = guest.stats_json().unwrap();
    assert!(json.starts_with('{') && json.contains("prezero"), "{}", json);
}

/// An Arc<Guest> makes a 'static memory that threads share.
#[cfg(feature = "vm-memory")]
#[test]
fn arc_guest_memory_across_threads() {
    use std::sync::Arc;
    use vm_memory::{Bytes, GuestAddress};
    use zvmm::vm_memory_adapter::ZvmmMemory;

    let test = "Arc<Guest> memory across threads";
    capture_log();
    let _one = hugepages_lock();
    if let Err(why) = need_2m_hugepages(4) {
        skip!(test, "{}", why);
    }
    let pol = Policy::new().unwrap().with("zeroing.mode", "demand").unwrap();
    let guest = Arc::new(Guest::open(&Mem::new(4 * PAGE_2M, PAGE_2M), Some(&pol)).unwrap());
    match guest.prepare(PAGE_2M) {
        Ok(()) => {}
        Err(e) if e.errno() == libc::EPERM => skip!(test, "no userfaultfd: {}", e),
        Err(e) => panic!("{}", e),
    }
    guest.serve_thread().unwrap();
    guest.start().unwrap();
    let ram = Arc::new(ZvmmMemory::new(Arc::clone(&guest)).unwrap());
    let threads: Vec<_> = (0..4u64)
        .map(|i| {
            let ram = Arc::clone(&ram);
            std::thread::spawn(move || {
                let at = GuestAddress(i * PAGE_2M + 100 + i);
                ram.access(at, 8).unwrap();
                assert_eq!(ram.read_obj::<u64>(at).unwrap(), 0);
                ram.write_obj(i + 1, at).unwrap();
                ram.read_obj::<u64>(at).unwrap()
            })
        })
        .collect();
    let got: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(got, vec![1, 2, 3, 4]);
    guest.stop().unwrap();
    guest.exit().unwrap();
    drop(ram);
    assert_eq!(Arc::strong_count(&guest), 1);
}
