// SPDX-License-Identifier: MIT
//! Memory leased from zvmmd through [`Mem::service`]: a zvmmd of the
//! test's own (the binary $ZVMMD_BIN, which run-tests.sh points at the
//! build's) fills chunks; the Rust VMM opens a lease, reads zero through
//! vm-memory everywhere, writes and reads back, and the lease goes back
//! when the Guest is dropped. Needs root (zvmmd mounts hugetlbfs) and 48
//! free 2 MiB hugepages; without them the test says "skipped: ...". A
//! socket no zvmmd listens on says ENOENT anywhere.

#[macro_use]
mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use vm_memory::{Bytes, GuestAddress};
use zvmm::vm_memory_adapter::ZvmmMemory;
use zvmm::{Guest, Mem, Policy, PAGE_2M};

const RAM: u64 = 32 * MIB;

#[test]
fn a_socket_no_zvmmd_listens_on_is_enoent() {
    capture_log();
    let mem = Mem::new(RAM, PAGE_2M).service(Some("/nonexistent/zvmmd.sock"));
    let err = Guest::open(&mem, None).unwrap_err();
    assert_eq!(err.errno(), libc::ENOENT, "{}", err);
    assert!(!logged("/nonexistent/zvmmd.sock").is_empty(), "the log names the socket");
    // The last source named decides: a pool after it is a pool.
    let mem = Mem::new(RAM, PAGE_2M)
        .service(None::<&Path>)
        .pool("/nonexistent/dir/pool");
    assert!(format!("{:?}", mem).contains("service_path: None"), "{:?}", mem);
    assert!(Guest::open(&mem, None).is_err());
    assert!(!logged("/nonexistent/dir/pool").is_empty(), "the log names the pool");
}

/// zvmmd, ended by its pid when dropped.
struct Zvmmd {
    child: Child,
    dir: TempDir,
}

impl Drop for Zvmmd {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        // zvmmd unmounts at a clean stop; a crash left it mounted.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.0.join("chunks/2M"))
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn a_lease_from_zvmmd_reads_zero() {
    let test = "a lease from zvmmd";
    capture_log();
    let _one = hugepages_lock();
    if unsafe { libc::geteuid() } != 0 {
        skip!(test, "zvmmd mounts hugetlbfs: run as root");
    }
    let bin = match std::env::var("ZVMMD_BIN") {
        Ok(b) if Path::new(&b).is_file() => b,
        _ => skip!(test, "no zvmmd binary: set ZVMMD_BIN (run-tests.sh sets the build's)"),
    };
    if let Err(why) = need_2m_hugepages(48) {
        skip!(test, "{}", why);
    }
    let dir = TempDir::new("/tmp/zvmm-test-rust-zvmmd-").unwrap();
    let sock = dir.0.join("zvmmd.sock");
    let conf = dir.0.join("zvmmd.conf");
    std::fs::write(
        &conf,
        format!(
            "[service]\nsocket = {}\ndir = {}/chunks\ngroup = root\n[pages.2M]\nchunk = 32M\nlow = 32M\nhigh = 32M\nmax = 96M\n",
            sock.display(),
            dir.0.display()
        ),
    )
    .unwrap();
    let child = Command::new(&bin)
        .arg("--config")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {}: {}", test, bin, e));
    let zvmmd = Zvmmd { child, dir };
    let mem = Mem::new(RAM, PAGE_2M).service(Some(&sock));
    let pol = Policy::new().and_then(|p| p.with("zeroing.mode", "prezero")).unwrap();
    // Until zvmmd listens and has filled its chunk: a lease of it is
    // all zeroed ahead (one before that may be a hole the kernel zeroes,
    // and goes back at drop).
    let t = Instant::now();
    let guest = loop {
        if let Ok(g) = Guest::open(&mem, Some(&pol)) {
            let s = g.stats().unwrap();
            assert_eq!(s.service_zero_bytes + s.service_empty_bytes, RAM, "{}", test);
            if s.service_zero_bytes == RAM {
                break g;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(60), "{}: no zeroed chunk from zvmmd", test);
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(guest.layout().fd.is_none(), "{}: a lease has no one file", test);
    let (fd, offset) = guest.file().unwrap_or_else(|e| panic!("{}: file: {}", test, e));
    assert!(std::os::unix::io::AsRawFd::as_raw_fd(&fd) >= 0);
    assert_eq!(offset, 0);
    guest.prepare(PAGE_2M).unwrap();
    {
        let ram = ZvmmMemory::new(&guest).unwrap();
        ram.access_all().unwrap();
        let mut buf = vec![0xffu8; RAM as usize];
        ram.read_slice(&mut buf, GuestAddress(0)).unwrap();
        assert!(buf.iter().all(|&b| b == 0), "{}: a leased byte is not zero", test);
        ram.write_slice(&[0x5a; 64], GuestAddress(RAM - 64)).unwrap();
        let mut back = [0u8; 64];
        ram.read_slice(&mut back, GuestAddress(RAM - 64)).unwrap();
        assert_eq!(back, [0x5a; 64]);
    }
    guest.stop().unwrap();
    guest.exit().unwrap();
    drop(guest);
    // Returned: zvmmd leases again (max holds three chunks; one never
    // returned would leave it short after a few).
    for i in 0..4 {
        // zvmmd takes a returned lease back as it reads the hangup.
        let t = Instant::now();
        loop {
            match Guest::open(&mem, Some(&pol)) {
                Ok(g) => break drop(g),
                Err(e) if t.elapsed() > Duration::from_secs(10) => {
                    panic!("{}: lease {} after the first: {}", test, i + 1, e)
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
    drop(zvmmd);
}
