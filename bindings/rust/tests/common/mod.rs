// SPDX-License-Identifier: MIT
//! What the integration tests share: skipping that says why (and fails
//! under ZVMM_RUST_REQUIRE=1), a hugetlbfs mount of the test's own, the
//! library's log kept for the tests to read.
#![allow(dead_code)]

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once};

/// Whether a test that cannot run fails instead of skipping: set where
/// the environment is known to have what the tests need (CI as root,
/// hugepages reserved), so that a skip cannot hide a test that no
/// longer runs.
pub fn required() -> bool {
    std::env::var("ZVMM_RUST_REQUIRE").map_or(false, |v| v == "1")
}

/// Ends a test that cannot run here: "skipped: TEST: WHY" on stderr
/// (bindings/rust/run-tests.sh counts those lines), or a failure under
/// ZVMM_RUST_REQUIRE=1.
macro_rules! skip {
    ($test:expr, $($why:tt)*) => {{
        let why = format!($($why)*);
        if crate::common::required() {
            panic!("{}: cannot run, and ZVMM_RUST_REQUIRE=1: {}", $test, why);
        }
        // On a line of its own: the harness's "test NAME ... " is
        // still open under --nocapture.
        eprintln!("\nskipped: {}: {}", $test, why);
        return;
    }};
}

/// What the library logged, warnings and errors, for a test to look at.
static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The library's warnings and errors, once per process: kept for
/// [`logged`], as the tests provoke errors on purpose and their messages
/// are not the reader's; on stderr too with ZVMM_TEST_LOG=1.
pub fn capture_log() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let echo = std::env::var("ZVMM_TEST_LOG").map_or(false, |v| v == "1");
        zvmm::set_log(zvmm::LogLevel::Warning, move |level, msg| {
            let line = format!("libzvmm {:?}: {}", level, msg);
            if echo {
                eprintln!("{}", line);
            }
            LOGGED.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        })
    });
}

/// The library's messages so far that contain @needle.
pub fn logged(needle: &str) -> Vec<String> {
    let log = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    log.iter().filter(|l| l.contains(needle)).cloned().collect()
}

/// One hugepage test at a time: each needs its pool's hugepages free,
/// and the tests run on threads of one process.
pub fn hugepages_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    // A test that failed holding it left no hugepages behind (its
    // mount's guard unmounted).
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub const MIB: u64 = 1 << 20;

/// Free 2 MiB hugepages, or why none can be counted.
pub fn free_2m_hugepages() -> Result<u64, String> {
    let path = "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages";
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {}", path, e))?;
    text.trim().parse().map_err(|e| format!("{}: {}", path, e))
}

/// Err(why) when @pages 2 MiB hugepages are not free.
pub fn need_2m_hugepages(pages: u64) -> Result<(), String> {
    let free = free_2m_hugepages()?;
    if free < pages {
        return Err(format!(
            "{} free 2 MiB hugepages, the test needs {} (echo {} > /proc/sys/vm/nr_hugepages)",
            free, pages, pages * 2
        ));
    }
    Ok(())
}

fn mkdtemp(prefix: &str) -> Result<PathBuf, String> {
    let template = CString::new(format!("{}XXXXXX", prefix)).unwrap();
    let raw = template.into_raw();
    let ret = unsafe { libc::mkdtemp(raw) };
    let template = unsafe { CString::from_raw(raw) };
    if ret.is_null() {
        return Err(format!("mkdtemp {}: {}", prefix, std::io::Error::last_os_error()));
    }
    Ok(PathBuf::from(template.into_string().unwrap()))
}

/// A directory of the test's own (mode 0700), removed on drop: a pool's
/// state records go there, never to the machine's /var/lib/zvmm.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> Result<TempDir, String> {
        mkdtemp(prefix).map(TempDir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A hugetlbfs mount of 2 MiB pages at /tmp/zvmm-test-rust-XXXXXX, its
/// size limited to what the test asked for, unmounted and removed on
/// drop, which unwinding from a failed assertion runs too (a killed
/// test leaves it to .ci/run, which unmounts every /tmp/zvmm-test*
/// hugetlbfs). ZVMM_RUST_HUGETLBFS names a mount to use instead (for a
/// user who may not mount): the test's files there are removed on drop.
pub struct Hugetlbfs {
    pub dir: PathBuf,
    mounted: bool,
    files: Vec<PathBuf>,
}

impl Hugetlbfs {
    pub fn new(size_bytes: u64) -> Result<Hugetlbfs, String> {
        if let Ok(dir) = std::env::var("ZVMM_RUST_HUGETLBFS") {
            return Ok(Hugetlbfs {
                dir: PathBuf::from(dir),
                mounted: false,
                files: Vec::new(),
            });
        }
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root: cannot mount hugetlbfs (or set ZVMM_RUST_HUGETLBFS to a 2 MiB hugetlbfs mount of yours)".into());
        }
        let dir = mkdtemp("/tmp/zvmm-test-rust-")?;
        let cdir = CString::new(dir.as_os_str().to_str().unwrap()).unwrap();
        let opts = CString::new(format!("pagesize=2M,size={},mode=0700", size_bytes)).unwrap();
        let ret = unsafe {
            libc::mount(
                b"none\0".as_ptr() as *const libc::c_char,
                cdir.as_ptr(),
                b"hugetlbfs\0".as_ptr() as *const libc::c_char,
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                opts.as_ptr() as *const libc::c_void,
            )
        };
        if ret != 0 {
            let err = std::io::Error::last_os_error();
            let _ = std::fs::remove_dir(&dir);
            return Err(format!("cannot mount hugetlbfs at {}: {}", dir.display(), err));
        }
        Ok(Hugetlbfs {
            dir,
            mounted: true,
            files: Vec::new(),
        })
    }

    /// A file name in the mount, removed on drop.
    pub fn file(&mut self, name: &str) -> PathBuf {
        let path = self.dir.join(format!("{}-{}", name, std::process::id()));
        let _ = std::fs::remove_file(&path);
        self.files.push(path.clone());
        path
    }
}

impl Drop for Hugetlbfs {
    fn drop(&mut self) {
        // The files first: a hugetlbfs file holds its hugepages until
        // removed, mounted or not.
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
        if !self.mounted {
            return;
        }
        let cdir = CString::new(self.dir.as_os_str().to_str().unwrap()).unwrap();
        if unsafe { libc::umount2(cdir.as_ptr(), 0) } != 0 {
            // Still busy (a mapping left by a failed test): detached, it
            // goes when the last user does.
            unsafe { libc::umount2(cdir.as_ptr(), libc::MNT_DETACH) };
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Another tenant's data: the byte at file offset @off, never zero. A
/// period of 1 MiB, so that a whole pool is written by copies.
pub fn tenant_byte(off: u64) -> u8 {
    (((off % MIB).wrapping_mul(0x9e37_79b9) >> 7) as u8) | 1
}

/// Writes tenant_byte() over the whole of @path (created at @bytes) from
/// a MAP_SHARED mapping, as another process on the host would have left
/// it, and reads a few of those bytes back through a second mapping to
/// be sure the pages hold them.
pub fn tenant_fills(path: &Path, bytes: u64) -> Result<(), String> {
    use std::os::unix::io::AsRawFd;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("{}: {}", path.display(), e))?;
    file.set_len(bytes)
        .map_err(|e| format!("ftruncate {}: {}", path.display(), e))?;
    let map = |what: &str| -> Result<*mut u8, String> {
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap {} ({}): {}", path.display(), what, std::io::Error::last_os_error()));
        }
        Ok(p as *mut u8)
    };
    let p = map("write")?;
    let template: Vec<u8> = (0..MIB).map(tenant_byte).collect();
    for start in (0..bytes).step_by(MIB as usize) {
        let n = MIB.min(bytes - start) as usize;
        unsafe { std::ptr::copy_nonoverlapping(template.as_ptr(), p.add(start as usize), n) };
    }
    unsafe { libc::munmap(p as *mut libc::c_void, bytes as usize) };
    let p = map("read back")?;
    let mut bad = None;
    for off in [0, 1, 4095, 2 * MIB - 1, 2 * MIB + 3, bytes / 2 + 7, bytes - 1] {
        let b = unsafe { p.add(off as usize).read_volatile() };
        if b != tenant_byte(off) {
            bad = Some(off);
        }
    }
    unsafe { libc::munmap(p as *mut libc::c_void, bytes as usize) };
    match bad {
        Some(off) => Err(format!("{}: the tenant's byte at {} did not stay", path.display(), off)),
        None => Ok(()),
    }
}
