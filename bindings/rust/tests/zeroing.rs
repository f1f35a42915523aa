// SPDX-License-Identifier: MIT
//! The promise, seen from Rust through vm-memory: under each policy a
//! pool that another tenant filled with its data reads zero everywhere
//! the VMM reads it, once access() covered the range, and what the VMM
//! writes reads back. The tenant is a process that mapped the pool file
//! itself, or a guest before this one that wrote it through the API.
//!
//! Needs 32 free 2 MiB hugepages and a hugetlbfs mount (root mounts its
//! own); demand and hybrid need a userfaultfd. Without them each test
//! says "skipped: ..." (and fails under ZVMM_RUST_REQUIRE=1).

#[macro_use]
mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use common::*;
use vm_memory::{Bytes, GuestAddress};
use zvmm::vm_memory_adapter::ZvmmMemory;
use zvmm::{Guest, Mem, Policy, PAGE_2M};

const RAM: u64 = 64 * MIB;
const PAGES: u64 = RAM / PAGE_2M;
/// What a loader writes right after prepare, made zero by prepare.
const BOOT: u64 = PAGE_2M;

fn policy(mode: &str, state: &Path, on_exit: &str) -> Policy {
    Policy::new()
        .and_then(|p| p.with("zeroing.mode", mode))
        .and_then(|p| p.with("zeroing.workers", "2"))
        .and_then(|p| p.with("pool.state_dir", state.to_str().unwrap()))
        .and_then(|p| p.with("pool.on_exit", on_exit))
        .unwrap_or_else(|e| panic!("policy {} on_exit {}: {}", mode, on_exit, e))
}

/// Where the VMM reads: unaligned starts and lengths, ranges across a
/// hugepage boundary, the last bytes of RAM.
fn probes() -> Vec<(u64, usize)> {
    vec![
        (BOOT, 8),
        (BOOT + 4095, 1),
        (2 * PAGE_2M + 1, 13),
        (5 * PAGE_2M - 3, 8),
        (9 * PAGE_2M - 4091, 8192),
        (17 * PAGE_2M + 12345, 100_000),
        (RAM / 2 - 1, 2),
        (RAM - PAGE_2M - 7, 64),
        (RAM - 4096, 4096),
        (RAM - 8, 8),
        (RAM - 1, 1),
    ]
}

/// Reads [addr, addr + len) through vm-memory's Bytes after access(),
/// as a device model would, and fails on any non-zero byte.
fn read_zero(ram: &ZvmmMemory<&Guest>, what: &str, addr: u64, len: usize) {
    ram.access(GuestAddress(addr), len)
        .unwrap_or_else(|e| panic!("{}: access({:#x}, {}): {}", what, addr, len, e));
    let mut buf = vec![0xffu8; len];
    ram.read_slice(&mut buf, GuestAddress(addr))
        .unwrap_or_else(|e| panic!("{}: read_slice({:#x}, {}): {}", what, addr, len, e));
    if let Some(i) = buf.iter().position(|&b| b != 0) {
        panic!(
            "{}: guest address {:#x} reads {:#04x}: another tenant's byte",
            what,
            addr + i as u64,
            buf[i]
        );
    }
    match len {
        1 => assert_eq!(ram.read_obj::<u8>(GuestAddress(addr)).unwrap(), 0, "{}: read_obj::<u8>({:#x})", what, addr),
        2 => assert_eq!(ram.read_obj::<u16>(GuestAddress(addr)).unwrap(), 0, "{}: read_obj::<u16>({:#x})", what, addr),
        8 => assert_eq!(ram.read_obj::<u64>(GuestAddress(addr)).unwrap(), 0, "{}: read_obj::<u64>({:#x})", what, addr),
        _ => {}
    }
}

/// What the VMM writes and reads back: (address, bytes).
fn writes() -> Vec<(u64, Vec<u8>)> {
    let long: Vec<u8> = (0..(2 * PAGE_2M + 4096) as usize).map(|i| (i % 251) as u8 + 1).collect();
    vec![(3 * PAGE_2M + 7, long), (RAM - 11, vec![0x5a; 11])]
}

fn pages_of(addr: u64, len: usize) -> std::ops::RangeInclusive<u64> {
    addr / PAGE_2M..=(addr + len as u64 - 1) / PAGE_2M
}

/// Every byte of guest memory, whole: zero except what @written put.
fn scan(ram: &ZvmmMemory<&Guest>, what: &str, written: &[(u64, Vec<u8>)]) {
    ram.access_all().unwrap_or_else(|e| panic!("{}: access_all: {}", what, e));
    let chunk = MIB as usize;
    let mut buf = vec![0u8; chunk];
    let mut want = vec![0u8; chunk];
    for start in (0..RAM).step_by(chunk) {
        let end = start + chunk as u64;
        want.iter_mut().for_each(|b| *b = 0);
        for (a, d) in written {
            let (from, to) = ((*a).max(start), (*a + d.len() as u64).min(end));
            if from < to {
                want[(from - start) as usize..(to - start) as usize]
                    .copy_from_slice(&d[(from - a) as usize..(to - a) as usize]);
            }
        }
        ram.read_slice(&mut buf, GuestAddress(start)).unwrap();
        if buf != want {
            let i = buf.iter().zip(&want).position(|(b, w)| b != w).unwrap();
            panic!(
                "{}: guest address {:#x} reads {:#04x}, not {:#04x}",
                what,
                start + i as u64,
                buf[i],
                want[i]
            );
        }
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Prepare, or the test's skip when the policy can have no userfaultfd.
macro_rules! prepare_or_skip {
    ($test:expr, $guest:expr) => {
        match $guest.prepare(BOOT) {
            Ok(()) => {}
            Err(e) if e.errno() == libc::EPERM => {
                skip!($test, "no userfaultfd for demand zeroing ({}): root, or /dev/userfaultfd", e)
            }
            Err(e) => panic!("{}: prepare: {}", $test, e),
        }
    };
}

/// The pool a tenant process wrote through its own mapping, opened as
/// this guest's memory under @mode.
fn tenant_mapping(mode: &str) {
    let test = format!("{}: a tenant's mapping", mode);
    capture_log();
    let _one = hugepages_lock();
    if let Err(why) = need_2m_hugepages(PAGES) {
        skip!(test, "{}", why);
    }
    let mut mnt = match Hugetlbfs::new(2 * RAM) {
        Ok(m) => m,
        Err(why) => skip!(test, "{}", why),
    };
    let state = TempDir::new("/tmp/zvmm-test-rust-state-").unwrap();
    let pool = mnt.file("pool");
    tenant_fills(&pool, RAM).unwrap();

    let t = Instant::now();
    let mem = Mem::new(RAM, PAGE_2M).pool(&pool);
    mem.check().unwrap_or_else(|e| panic!("{}: {}", test, e));
    let guest = Guest::open(&mem, Some(&policy(mode, &state.0, "release")))
        .unwrap_or_else(|e| panic!("{}: open: {}", test, e));
    let open_ms = ms(t);
    let s = guest.stats().unwrap();
    assert_eq!(s.mode(), mode);
    assert_eq!(s.dirty_pages, PAGES, "{}: the open found the tenant's pages", test);

    let t = Instant::now();
    prepare_or_skip!(test, guest);
    let prepare_ms = ms(t);
    let ram = ZvmmMemory::new(&guest).unwrap();

    // The loader's bytes: prepare made them zero, no access() needed.
    let mut boot = vec![0xffu8; BOOT as usize];
    ram.read_slice(&mut boot, GuestAddress(0)).unwrap();
    assert!(boot.iter().all(|&b| b == 0), "{}: the boot bytes are not zero", test);

    let t = Instant::now();
    for (addr, len) in probes() {
        read_zero(&ram, &test, addr, len);
    }
    let probes_ms = ms(t);

    let written = writes();
    for (addr, data) in &written {
        ram.access(GuestAddress(*addr), data.len()).unwrap();
        ram.write_slice(data, GuestAddress(*addr)).unwrap();
        let mut back = vec![0u8; data.len()];
        ram.read_slice(&mut back, GuestAddress(*addr)).unwrap();
        assert!(&back == data, "{}: {:#x} does not read back what was written", test, addr);
    }
    let word = 0x0123_4567_89ab_cdefu64;
    let word_at = GuestAddress(11 * PAGE_2M + 3);
    ram.access(word_at, 8).unwrap();
    ram.write_obj(word, word_at).unwrap();
    assert_eq!(ram.read_obj::<u64>(word_at).unwrap(), word);
    let mut written = written;
    written.push((word_at.0, word.to_ne_bytes().to_vec()));

    // A vCPU's first touches, through the mapping as KVM would make
    // them: the library serves the pages no access() covered.
    let skip_pages: BTreeSet<u64> = written.iter().flat_map(|(a, d)| pages_of(*a, d.len())).collect();
    guest
        .serve_thread_with(|e| eprintln!("serving failed: {}", e))
        .unwrap();
    guest.start().unwrap();
    let t = Instant::now();
    let (addr, bytes) = guest.memory();
    assert_eq!(bytes, RAM);
    let base = addr as usize;
    let vcpu = std::thread::spawn(move || {
        let mut nonzero = Vec::new();
        for page in (0..PAGES).filter(|p| !skip_pages.contains(p)) {
            for off in [0, 777, PAGE_2M - 1] {
                let at = page * PAGE_2M + off;
                let b = unsafe { ((base + at as usize) as *const u8).read_volatile() };
                if b != 0 {
                    nonzero.push(at);
                }
            }
        }
        nonzero
    });
    let nonzero = vcpu.join().unwrap();
    let vcpu_ms = ms(t);
    assert!(nonzero.is_empty(), "{}: the vCPU read non-zero at {:x?}", test, nonzero);

    let t = Instant::now();
    scan(&ram, &test, &written);
    let scan_ms = ms(t);

    guest.stop().unwrap();
    guest.exit().unwrap();
    // After exit the memory is no one's: reads and access are refused,
    // none reaches the PROT_NONE mapping.
    assert!(ram.read_obj::<u64>(GuestAddress(BOOT)).is_err(), "{}: read after exit", test);
    assert!(ram.access(GuestAddress(0), 8).is_err(), "{}: access after exit", test);
    let s = guest.stats().unwrap();
    eprintln!(
        "zvmm-rust: {}: passed; open {:.1} ms, prepare {:.1} ms, probes {:.1} ms, vCPU {:.1} ms, \
         scan {:.1} ms; backend {}, faults {}, scrubbed for faults {}, background {} MiB",
        test,
        open_ms,
        prepare_ms,
        probes_ms,
        vcpu_ms,
        scan_ms,
        s.backend(),
        s.faults,
        s.fault_scrubbed_pages,
        s.background_bytes >> 20
    );
    drop(ram);
    drop(guest);
}

/// The pool a guest before this one wrote through the API (kept by its
/// on_exit = keep), opened as this guest's memory under @mode.
fn previous_guest(mode: &str) {
    let test = format!("{}: a previous guest", mode);
    capture_log();
    let _one = hugepages_lock();
    if let Err(why) = need_2m_hugepages(PAGES) {
        skip!(test, "{}", why);
    }
    let mut mnt = match Hugetlbfs::new(2 * RAM) {
        Ok(m) => m,
        Err(why) => skip!(test, "{}", why),
    };
    let state = TempDir::new("/tmp/zvmm-test-rust-state-").unwrap();
    let pool = mnt.file("pool");
    let mem = Mem::new(RAM, PAGE_2M).pool(&pool);

    {
        let before = Guest::open(&mem, Some(&policy(mode, &state.0, "keep")))
            .unwrap_or_else(|e| panic!("{}: the first guest's open: {}", test, e));
        prepare_or_skip!(test, before);
        let ram = ZvmmMemory::new(&before).unwrap();
        ram.access_all().unwrap();
        let data: Vec<u8> = (0..MIB).map(tenant_byte).collect();
        for start in (0..RAM).step_by(MIB as usize) {
            ram.write_slice(&data, GuestAddress(start)).unwrap();
        }
        before.start().unwrap();
        before.stop().unwrap();
        before.exit().unwrap();
        assert_eq!(before.stats().unwrap().on_exit(), "keep");
    }

    let t = Instant::now();
    let guest = Guest::open(&mem, Some(&policy(mode, &state.0, "release")))
        .unwrap_or_else(|e| panic!("{}: open: {}", test, e));
    let open_ms = ms(t);
    assert_eq!(
        guest.stats().unwrap().dirty_pages,
        PAGES,
        "{}: the open found the first guest's pages",
        test
    );
    let t = Instant::now();
    prepare_or_skip!(test, guest);
    let prepare_ms = ms(t);
    let ram = ZvmmMemory::new(&guest).unwrap();
    let t = Instant::now();
    for (addr, len) in probes() {
        read_zero(&ram, &test, addr, len);
    }
    let probes_ms = ms(t);
    let t = Instant::now();
    scan(&ram, &test, &[]);
    let scan_ms = ms(t);
    guest.exit().unwrap();
    eprintln!(
        "zvmm-rust: {}: passed; open {:.1} ms, prepare {:.1} ms, probes {:.1} ms, scan {:.1} ms",
        test, open_ms, prepare_ms, probes_ms, scan_ms
    );
}

#[test]
fn prezero_tenant_mapping_reads_zero() {
    tenant_mapping("prezero");
}

#[test]
fn demand_tenant_mapping_reads_zero() {
    tenant_mapping("demand");
}

#[test]
fn hybrid_tenant_mapping_reads_zero() {
    tenant_mapping("hybrid");
}

#[test]
fn prezero_previous_guest_reads_zero() {
    previous_guest("prezero");
}

#[test]
fn demand_previous_guest_reads_zero() {
    previous_guest("demand");
}

#[test]
fn hybrid_previous_guest_reads_zero() {
    previous_guest("hybrid");
}
