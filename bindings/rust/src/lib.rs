// SPDX-License-Identifier: MIT
//! Rust bindings to libzvmm, zvmm's zeroing engine for a VMM to embed.
//!
//! libzvmm owns a guest's hugepage memory from open to close and keeps
//! one promise: the guest never reads a byte that anyone else wrote, and
//! nothing the guest wrote is changed while it runs. The lifecycle is the
//! C library's (libzvmm(3), `include/zvmm/zvmm.h`):
//!
//! ```text
//! Guest::open       lock and map the memory, classify its pages
//! Guest::memory     the mapping to give KVM (a memslot)
//! Guest::prepare    the policy's work before the first vCPU runs
//! Guest::access     before a VMM thread touches guest memory
//! Guest::start      the vCPUs run
//! Guest::serve_thread, or Guest::fd + Guest::process from an event loop
//! Guest::stop       the run is over
//! Guest::exit       the guest is gone: the policy's on_exit
//! drop(guest)       unmap, unlock (zvmm_guest_close)
//! ```
//!
//! With the `vm-memory` feature (on by default), [`vm_memory_adapter`]
//! gives the guest mapping to rust-vmm crates as a `vm_memory::GuestMemory`.
//!
//! The raw declarations are in [`sys`], generated from the header.

use std::cell::Cell;
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::{AsRawFd, BorrowedFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

#[allow(non_camel_case_types, non_upper_case_globals, non_snake_case, dead_code)]
#[allow(clippy::all)]
pub mod sys;

#[cfg(feature = "vm-memory")]
pub mod vm_memory_adapter;

// README.md's example compiles as a doctest (no_run: it needs hugepages).
#[cfg(all(doctest, feature = "vm-memory"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// 2 MiB hugepages (`ZVMM_PAGE_2M`). bindgen types the macro by its
/// value (u32); the C API takes it as a u64.
pub const PAGE_2M: u64 = sys::ZVMM_PAGE_2M as u64;
/// 1 GiB hugepages (`ZVMM_PAGE_1G`).
pub const PAGE_1G: u64 = sys::ZVMM_PAGE_1G as u64;

// ---------------------------------------------------------------- errors

/// A libzvmm call that failed: the negative errno it returned, and which
/// call. What went wrong in words went to the log (see [`set_log`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error {
    code: i32,
    call: &'static str,
}

/// The result of a libzvmm call.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of @call from its negative errno (a positive one is
    /// taken as the errno itself).
    pub fn new(call: &'static str, code: i32) -> Error {
        Error {
            code: -code.abs(),
            call,
        }
    }

    /// The negative errno, as the C call returned it.
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The errno (positive): `libc::EBUSY` and the like.
    pub fn errno(&self) -> i32 {
        -self.code
    }

    /// The C function that failed ("zvmm_guest_open").
    pub fn call(&self) -> &'static str {
        self.call
    }

    /// The std::io kind of the errno.
    pub fn kind(&self) -> io::ErrorKind {
        io::Error::from_raw_os_error(self.errno()).kind()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}",
            self.call,
            io::Error::from_raw_os_error(self.errno())
        )
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({}, {})", self.call, self.code)
    }
}

impl std::error::Error for Error {}

/// Keeps the errno (`raw_os_error()`); the call's name is in the
/// library's log.
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::from_raw_os_error(e.errno())
    }
}

/// 0 or more: Ok(ret); negative: the error of @call.
fn check(call: &'static str, ret: c_int) -> Result<c_int> {
    if ret < 0 {
        Err(Error::new(call, ret))
    } else {
        Ok(ret)
    }
}

fn cstring(call: &'static str, s: &[u8]) -> Result<CString> {
    // A NUL inside would cut the string short: the library would act on
    // another name than the one given.
    CString::new(s).map_err(|_| Error::new(call, libc::EINVAL))
}

/// A NUL-terminated char array of a C struct, as text.
fn field_str(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Calls @fill with growing buffers until the text fits: the formatting
/// calls return the length, or -ENOSPC.
fn format_grow(call: &'static str, mut fill: impl FnMut(*mut c_char, usize) -> c_int) -> Result<String> {
    let mut len = 4096;
    loop {
        let mut buf = vec![0u8; len];
        let ret = fill(buf.as_mut_ptr() as *mut c_char, len);
        if ret == -libc::ENOSPC && len < (64 << 20) {
            len *= 4;
            continue;
        }
        let n = check(call, ret)? as usize;
        buf.truncate(n.min(len));
        return Ok(String::from_utf8_lossy(&buf).into_owned());
    }
}

// ------------------------------------------------------------- version

static VERSION_ONCE: Once = Once::new();
static VERSION_RET: AtomicI32 = AtomicI32::new(0);

/// Whether the libzvmm that runs has the API this crate was generated
/// against (`zvmm_check_version()` with the header's major and minor).
/// Checked once per process; every constructor calls it first, so a
/// library too old fails there with ENOTSUP (the log says both
/// versions) instead of misreading a struct.
pub fn check_version() -> Result<()> {
    VERSION_ONCE.call_once(|| {
        let ret = unsafe {
            sys::zvmm_check_version(sys::ZVMM_VERSION_MAJOR, sys::ZVMM_VERSION_MINOR)
        };
        VERSION_RET.store(ret, Ordering::SeqCst);
    });
    check("zvmm_check_version", VERSION_RET.load(Ordering::SeqCst)).map(|_| ())
}

/// The running library's version, "MAJOR.MINOR.PATCH".
pub fn version() -> &'static str {
    // The library returns a string of its own, never freed.
    unsafe { CStr::from_ptr(sys::zvmm_version()) }
        .to_str()
        .unwrap_or("?")
}

/// The version of the header these bindings were generated from.
pub fn header_version() -> &'static str {
    let v: &'static [u8] = sys::ZVMM_VERSION;
    std::str::from_utf8(&v[..v.len() - 1]).unwrap_or("?")
}

// ----------------------------------------------------------------- log

/// A message's level, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Error,
    Warning,
    Info,
    Debug,
}

impl LogLevel {
    fn raw(self) -> sys::zvmm_log_level {
        match self {
            LogLevel::Error => sys::ZVMM_LOG_ERROR,
            LogLevel::Warning => sys::ZVMM_LOG_WARNING,
            LogLevel::Info => sys::ZVMM_LOG_INFO,
            LogLevel::Debug => sys::ZVMM_LOG_DEBUG,
        }
    }

    fn from_raw(level: sys::zvmm_log_level) -> LogLevel {
        match level {
            sys::ZVMM_LOG_ERROR => LogLevel::Error,
            sys::ZVMM_LOG_WARNING => LogLevel::Warning,
            sys::ZVMM_LOG_INFO => LogLevel::Info,
            _ => LogLevel::Debug,
        }
    }
}

thread_local! {
    // Set while this thread runs one of the closures handed to the
    // library: a lifecycle call from there would wait on the lock its
    // caller holds (or, from on_error, on the serving thread itself).
    static IN_CALLBACK: Cell<u32> = const { Cell::new(0) };
}

/// Runs a closure handed to the library: never lets a panic unwind into
/// C (undefined behaviour), and marks the thread as inside a callback.
fn callback(f: impl FnOnce()) {
    IN_CALLBACK.with(|c| c.set(c.get() + 1));
    let _ = catch_unwind(AssertUnwindSafe(f));
    IN_CALLBACK.with(|c| c.set(c.get() - 1));
}

fn msg_str(msg: *const c_char) -> String {
    if msg.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned()
}

type LogFn = dyn Fn(LogLevel, &str) + Send + Sync;

unsafe extern "C" fn log_trampoline(arg: *mut c_void, level: sys::zvmm_log_level, msg: *const c_char) {
    let f = &*(arg as *const Box<LogFn>);
    let text = msg_str(msg);
    callback(|| f(LogLevel::from_raw(level), &text));
}

/// Sends the library's messages up to @max to @f, process-wide
/// (`zvmm_set_log()`): call it once at start, before the first
/// [`Guest::open`]. @f is called from the library's threads too.
///
/// The closure is never freed: a thread of the library may still be
/// inside the one it replaces, and nothing says when it has left.
pub fn set_log<F>(max: LogLevel, f: F)
where
    F: Fn(LogLevel, &str) + Send + Sync + 'static,
{
    let boxed: Box<Box<LogFn>> = Box::new(Box::new(f));
    let arg = Box::into_raw(boxed) as *mut c_void;
    unsafe { sys::zvmm_set_log(Some(log_trampoline), arg, max.raw()) };
}

/// No messages (the library's default).
pub fn clear_log() {
    unsafe { sys::zvmm_set_log(None, ptr::null_mut(), sys::ZVMM_LOG_ERROR) };
}

// -------------------------------------------------------------- policy

/// A zeroing policy: the keys of zvmm.conf(5). A new one holds the
/// defaults (hybrid, backend auto). It may be dropped once
/// [`Guest::open`] returned.
pub struct Policy {
    raw: NonNull<sys::zvmm_policy>,
}

// One thread at a time per policy (the header): a Policy moves between
// threads, and &mut self serialises the calls that change it. Not Sync:
// the header promises nothing for two threads reading one policy.
unsafe impl Send for Policy {}

impl Policy {
    /// The defaults.
    pub fn new() -> Result<Policy> {
        check_version()?;
        let mut raw = ptr::null_mut();
        check("zvmm_policy_new", unsafe { sys::zvmm_policy_new(&mut raw) })?;
        NonNull::new(raw)
            .map(|raw| Policy { raw })
            .ok_or_else(|| Error::new("zvmm_policy_new", libc::ENOMEM))
    }

    /// Reads a policy file over this one; unchanged on failure (EINVAL:
    /// malformed, the log says file:line).
    pub fn load(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = cstring("zvmm_policy_load", path.as_ref().as_os_str().as_bytes())?;
        check("zvmm_policy_load", unsafe {
            sys::zvmm_policy_load(self.raw.as_ptr(), path.as_ptr())
        })
        .map(|_| ())
    }

    /// Sets one key, "section.key" ("zeroing.mode"), as the file would;
    /// EINVAL for an unknown key or a bad value, the policy unchanged.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let key = cstring("zvmm_policy_set", key.as_bytes())?;
        let value = cstring("zvmm_policy_set", value.as_bytes())?;
        check("zvmm_policy_set", unsafe {
            sys::zvmm_policy_set(self.raw.as_ptr(), key.as_ptr(), value.as_ptr())
        })
        .map(|_| ())
    }

    /// [`Policy::set`] as a builder: `Policy::new()?.with("zeroing.mode", "demand")?`.
    pub fn with(mut self, key: &str, value: &str) -> Result<Policy> {
        self.set(key, value)?;
        Ok(self)
    }

    /// The policy as a policy file's text.
    pub fn format(&self) -> Result<String> {
        format_grow("zvmm_policy_format", |buf, len| unsafe {
            sys::zvmm_policy_format(self.raw.as_ptr(), buf, len)
        })
    }

    /// The C object, for calls these bindings do not wrap.
    pub fn as_ptr(&self) -> *mut sys::zvmm_policy {
        self.raw.as_ptr()
    }
}

impl Drop for Policy {
    fn drop(&mut self) {
        unsafe { sys::zvmm_policy_free(self.raw.as_ptr()) };
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.format() {
            Ok(text) => write!(f, "Policy({:?})", text),
            Err(e) => write!(f, "Policy(<{}>)", e),
        }
    }
}

// -------------------------------------------------------------- memory

/// Guest memory to open, from one source (`struct zvmm_mem`'s source):
/// an anonymous hugetlb memfd (the default), a pool file on a hugetlbfs
/// mount ([`Mem::pool`]), a hugetlb file the caller opened ([`Mem::fd`],
/// borrowed until the open: the library duplicates it), or a lease from
/// zvmmd, the host's zeroing service ([`Mem::service`]). The last one
/// called decides.
#[derive(Clone)]
pub struct Mem<'fd> {
    // Made by zvmm_mem_init(): fields the header adds later (flags,
    // reserved words) are whatever that function makes them, zero, and
    // the library refuses values it does not know.
    raw: sys::zvmm_mem,
    pool_path: Option<CString>,
    service_path: Option<CString>,
    bad_path: bool,
    _fd: PhantomData<BorrowedFd<'fd>>,
}

impl<'fd> Mem<'fd> {
    /// @bytes (a multiple of @page_bytes) of @page_bytes pages
    /// ([`PAGE_2M`] or [`PAGE_1G`]) in an anonymous memfd.
    pub fn new(bytes: u64, page_bytes: u64) -> Mem<'fd> {
        let mut raw = std::mem::MaybeUninit::<sys::zvmm_mem>::zeroed();
        unsafe { sys::zvmm_mem_init(raw.as_mut_ptr(), bytes, page_bytes) };
        let mut raw = unsafe { raw.assume_init() };
        raw.source = sys::ZVMM_SOURCE_PRIVATE;
        Mem {
            raw,
            pool_path: None,
            service_path: None,
            bad_path: false,
            _fd: PhantomData,
        }
    }

    /// One source, its field alone set (the library refuses two).
    fn source(&mut self, source: sys::zvmm_source) {
        self.raw.source = source;
        self.raw.fd = -1;
        self.pool_path = None;
        self.service_path = None;
        self.bad_path = false;
    }

    fn c_path(&mut self, path: &Path) -> Option<CString> {
        // Said at check() or open(), where errors are returned.
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| self.bad_path = true)
            .ok()
    }

    /// A pool file on a hugetlbfs mount of page_bytes pages, created
    /// when missing, kept warm between launches.
    pub fn pool(mut self, path: impl AsRef<Path>) -> Mem<'fd> {
        self.source(sys::ZVMM_SOURCE_POOL);
        self.pool_path = self.c_path(path.as_ref());
        self
    }

    /// A hugetlb file the caller opened (hugetlbfs, or a memfd with
    /// MFD_HUGETLB), treated as a pool: every page it holds is someone
    /// else's data until made zero.
    pub fn fd<'a>(mut self, fd: BorrowedFd<'a>) -> Mem<'a> {
        self.source(sys::ZVMM_SOURCE_FD);
        let mut raw = self.raw;
        raw.fd = fd.as_raw_fd();
        Mem {
            raw,
            pool_path: None,
            service_path: None,
            bad_path: false,
            _fd: PhantomData,
        }
    }

    /// Leased from zvmmd (zvmmd(8)) through its socket @socket (None:
    /// /run/zvmm/zvmmd.sock): chunks it zeroed ahead, and, when it has
    /// too few, chunks the kernel zeroes at first touch
    /// (the service_zero_bytes and service_empty_bytes of [`Guest::stats`]).
    /// The lease ends when the Guest is dropped. No pool: no state
    /// record and no on_exit.
    pub fn service<P: AsRef<Path>>(mut self, socket: Option<P>) -> Mem<'fd> {
        self.source(sys::ZVMM_SOURCE_SERVICE);
        if let Some(p) = socket {
            self.service_path = self.c_path(p.as_ref());
        }
        self
    }

    pub fn bytes(&self) -> u64 {
        self.raw.bytes
    }

    pub fn page_bytes(&self) -> u64 {
        self.raw.page_bytes
    }

    /// The C struct, its paths pointing into self.
    pub fn as_raw(&self) -> sys::zvmm_mem {
        let mut raw = self.raw;
        raw.pool_path = self.pool_path.as_ref().map_or(ptr::null(), |p| p.as_ptr());
        raw.service_path = self.service_path.as_ref().map_or(ptr::null(), |p| p.as_ptr());
        raw
    }

    /// Whether the memory can be had before anything is taken: sizes,
    /// the mount, free hugepages, a pool held by another launch
    /// (`zvmm_mem_check()`; the reason goes to the log).
    pub fn check(&self) -> Result<()> {
        check_version()?;
        if self.bad_path {
            return Err(Error::new("zvmm_mem_check", libc::EINVAL));
        }
        let raw = self.as_raw();
        check("zvmm_mem_check", unsafe { sys::zvmm_mem_check(&raw) }).map(|_| ())
    }
}

impl fmt::Debug for Mem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mem")
            .field("bytes", &self.raw.bytes)
            .field("page_bytes", &self.raw.page_bytes)
            .field("source", &self.raw.source)
            .field("pool_path", &self.pool_path)
            .field("fd", &self.raw.fd)
            .field("service_path", &self.service_path)
            .finish()
    }
}

// ------------------------------------------------------------ backends

/// A clearing backend of this library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    pub name: String,
    /// The CPU features it needs, space separated, "none".
    pub needs: String,
    /// One line saying what it is.
    pub what: String,
    /// This CPU has what it needs.
    pub runs_here: bool,
}

/// The clearing backends, in registry order.
pub fn backends() -> Result<Vec<Backend>> {
    check_version()?;
    let zero: sys::zvmm_backend_info = unsafe { std::mem::zeroed() };
    let mut infos = vec![zero; 16];
    loop {
        let n = unsafe { sys::zvmm_backends(infos.as_mut_ptr(), infos.len() as u32) } as usize;
        if n > infos.len() {
            infos = vec![zero; n];
            continue;
        }
        infos.truncate(n);
        break;
    }
    Ok(infos
        .iter()
        .map(|b| Backend {
            name: field_str(&b.name),
            needs: field_str(&b.needs),
            what: field_str(&b.what),
            runs_here: b.runs_here,
        })
        .collect())
}

/// This machine's architecture ("x86-64", "arm64").
pub fn arch() -> &'static str {
    unsafe { CStr::from_ptr(sys::zvmm_arch()) }.to_str().unwrap_or("?")
}

/// The CPU features the backends care about: "sse2 avx2 erms ...".
pub fn cpu_features() -> String {
    let mut buf = vec![0 as c_char; 4096];
    unsafe { sys::zvmm_cpu_features(buf.as_mut_ptr(), buf.len()) };
    field_str(&buf)
}

// --------------------------------------------------------------- guest

type ErrorFn = dyn Fn(Error) + Send + Sync;
type ProgressFn = dyn Fn(u64, u64) + Send + Sync;

/// Closures handed to the library for one guest. Each stays allocated
/// until the guest is closed: a replaced one may still run on a thread
/// of the library for a moment, and close is the one point after which
/// none does.
///
/// Boxed twice: the library gets a thin pointer to the inner Box (a fat
/// `dyn` pointer), and the outer one keeps it in place while the Vec
/// grows.
#[derive(Default)]
#[allow(clippy::vec_box)]
struct Callbacks {
    logs: Vec<Box<Box<LogFn>>>,
    progress: Vec<Box<Box<ProgressFn>>>,
    on_error: Option<Box<Box<ErrorFn>>>,
}

/// One guest's memory, from `zvmm_guest_open()` to `zvmm_guest_close()`
/// (on drop).
///
/// Every method takes &self, and a Guest is Send and Sync, so that a VMM
/// shares it (`Arc<Guest>`, scoped threads) between its vCPU threads,
/// device models and event loop. The calls the header allows from any
/// thread ([`Guest::access`], [`Guest::cancel`], [`Guest::memory`],
/// [`Guest::layout`]) run at once; the others, which the library wants
/// from one thread at a time, take a lock of the Guest's. Calling one of
/// those from a closure the library runs (a log line, progress,
/// on_error) returns EDEADLK instead of waiting for itself.
pub struct Guest {
    raw: NonNull<sys::zvmm_guest>,
    addr: *mut u8,
    bytes: u64,
    page_bytes: u64,
    // zvmm_guest_access() before a successful prepare is the library's
    // EINVAL, but read without a lock against prepare on another thread;
    // this flag, set once prepare returned, keeps that race out.
    prepared: AtomicBool,
    // Set when exit is called: the library makes the mapping PROT_NONE
    // then, and the vm-memory adapter finds no region from here on.
    exited: AtomicBool,
    lifecycle: Mutex<Callbacks>,
}

// The library's threads reach the guest through its own pointer; ours
// reach it through the calls above, serialised where the header asks it.
unsafe impl Send for Guest {}
unsafe impl Sync for Guest {}

/// Where the guest memory lives: its file, for a VMM that shares it
/// (vhost-user, a snapshot writer) or splits it into memslots. See the
/// rule for a second mapping of the file at `zvmm_guest_layout()`: map
/// only ranges the guest already has or [`Guest::access`] made ready,
/// and unmap before [`Guest::exit`].
#[derive(Clone, Copy, Debug)]
pub struct Layout<'g> {
    /// The memory's file, owned by the library: never close it (a dup
    /// of it may be closed). None for a zvmmd lease, whose chunks are
    /// files of their own.
    pub fd: Option<BorrowedFd<'g>>,
    /// Of the guest mapping's first byte in the file.
    pub offset: u64,
    pub bytes: u64,
    pub page_bytes: u64,
    /// The guest mapping ([`Guest::memory`]).
    pub addr: *mut u8,
}

impl Guest {
    /// Opens @mem under @policy (None: the defaults): locks a pool, maps
    /// it, classifies its pages, starts the workers. EBUSY: the pool is
    /// in use; ENOMEM: hugepages short.
    pub fn open(mem: &Mem<'_>, policy: Option<&Policy>) -> Result<Guest> {
        check_version()?;
        if mem.bad_path {
            return Err(Error::new("zvmm_guest_open", libc::EINVAL));
        }
        let raw_mem = mem.as_raw();
        let pol = policy.map_or(ptr::null(), |p| p.raw.as_ptr() as *const _);
        let mut raw = ptr::null_mut();
        check("zvmm_guest_open", unsafe {
            sys::zvmm_guest_open(&raw_mem, pol, &mut raw)
        })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::new("zvmm_guest_open", libc::ENOMEM))?;
        let mut layout: sys::zvmm_layout = unsafe { std::mem::zeroed() };
        unsafe { sys::zvmm_guest_layout(raw.as_ptr(), &mut layout) };
        Ok(Guest {
            raw,
            addr: layout.addr as *mut u8,
            bytes: layout.bytes,
            page_bytes: layout.page_bytes,
            prepared: AtomicBool::new(false),
            exited: AtomicBool::new(false),
            lifecycle: Mutex::new(Callbacks::default()),
        })
    }

    fn lock(&self, call: &'static str) -> Result<MutexGuard<'_, Callbacks>> {
        if IN_CALLBACK.with(|c| c.get()) > 0 {
            return Err(Error::new(call, libc::EDEADLK));
        }
        // A panic while the lock was held left the guest as the library
        // had it: nothing of ours to repair.
        Ok(self.lifecycle.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The guest mapping, to give KVM as guest memory
    /// (KVM_SET_USER_MEMORY_REGION): its address and length, valid until
    /// the Guest is dropped. Never read or write it from the VMM before
    /// [`Guest::prepare`], and under demand and hybrid only where
    /// [`Guest::access`] made it ready (see there).
    pub fn memory(&self) -> (*mut u8, u64) {
        (self.addr, self.bytes)
    }

    /// The guest memory's length in bytes.
    pub fn len(&self) -> u64 {
        self.bytes
    }

    /// Never: a guest has at least one page. For clippy's len rule.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The hugepage size.
    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
    }

    /// Where the guest memory lives (`zvmm_guest_layout()`).
    pub fn layout(&self) -> Layout<'_> {
        let mut l: sys::zvmm_layout = unsafe { std::mem::zeroed() };
        unsafe { sys::zvmm_guest_layout(self.raw.as_ptr(), &mut l) };
        Layout {
            // Owned by the library and open until close, which needs
            // &mut self (drop): the borrow cannot outlive it.
            fd: (l.fd >= 0).then(|| unsafe { BorrowedFd::borrow_raw(l.fd) }),
            offset: l.offset,
            bytes: l.bytes,
            page_bytes: l.page_bytes,
            addr: l.addr as *mut u8,
        }
    }

    /// A log of this guest's own, up to @max, instead of [`set_log`]'s.
    pub fn set_log<F>(&self, max: LogLevel, f: F) -> Result<()>
    where
        F: Fn(LogLevel, &str) + Send + Sync + 'static,
    {
        unsafe extern "C" fn trampoline(
            arg: *mut c_void,
            _g: *mut sys::zvmm_guest,
            level: sys::zvmm_log_level,
            msg: *const c_char,
        ) {
            let f = &*(arg as *const Box<LogFn>);
            let text = msg_str(msg);
            callback(|| f(LogLevel::from_raw(level), &text));
        }
        let mut cbs = self.lock("zvmm_guest_set_log")?;
        let boxed: Box<Box<LogFn>> = Box::new(Box::new(f));
        let arg = &*boxed as *const Box<LogFn> as *mut c_void;
        unsafe { sys::zvmm_guest_set_log(self.raw.as_ptr(), Some(trampoline), arg, max.raw()) };
        cbs.logs.push(boxed);
        Ok(())
    }

    /// Back to the process-wide log.
    pub fn clear_log(&self) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_set_log")?;
        unsafe { sys::zvmm_guest_set_log(self.raw.as_ptr(), None, ptr::null_mut(), sys::ZVMM_LOG_ERROR) };
        Ok(())
    }

    /// Before the first vCPU runs. prezero: every page made zero. demand
    /// and hybrid: the first @boot_bytes made zero (the VMM's loader
    /// writes there next), every other first touch served later. One
    /// call per guest (EALREADY after); after a failure drop the guest.
    /// EPERM: demand or hybrid can have no userfaultfd.
    pub fn prepare(&self, boot_bytes: u64) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_prepare")?;
        check("zvmm_guest_prepare", unsafe {
            sys::zvmm_guest_prepare(self.raw.as_ptr(), boot_bytes)
        })?;
        self.prepared.store(true, Ordering::Release);
        Ok(())
    }

    /// Whether [`Guest::prepare`] succeeded.
    pub fn is_prepared(&self) -> bool {
        self.prepared.load(Ordering::Acquire)
    }

    /// Whether [`Guest::exit`] was called: the guest memory is no one's
    /// to touch from then on (the library made it PROT_NONE).
    pub fn is_exited(&self) -> bool {
        self.exited.load(Ordering::Acquire)
    }

    /// Makes guest memory [@offset, @offset + @bytes) safe for the VMM's
    /// own threads to read and write (whole pages, rounded out): a page
    /// the guest does not have yet is made zero and mapped, one it has is
    /// left alone. Under demand and hybrid a VMM thread touches guest
    /// memory only after this call covered it: an initrd or device tree
    /// before [`Guest::start`], a virtqueue's ring and buffers after.
    /// Any thread, the serving one included. EINVAL: out of range, or
    /// before prepare.
    pub fn access(&self, offset: u64, bytes: u64) -> Result<()> {
        // From a callback on the serving thread, which holds the lock
        // access() serialises with: it would wait on itself.
        if IN_CALLBACK.with(|c| c.get()) > 0 {
            return Err(Error::new("zvmm_guest_access", libc::EDEADLK));
        }
        if !self.is_prepared() || self.is_exited() {
            return Err(Error::new("zvmm_guest_access", libc::EINVAL));
        }
        check("zvmm_guest_access", unsafe {
            sys::zvmm_guest_access(self.raw.as_ptr(), offset, bytes)
        })
        .map(|_| ())
    }

    /// The vCPUs run: hybrid starts scrubbing in the background.
    pub fn start(&self) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_start")?;
        unsafe { sys::zvmm_guest_start(self.raw.as_ptr()) };
        Ok(())
    }

    /// An fd to poll for POLLIN; when readable, call
    /// [`Guest::process`]. None under prezero (nothing to serve) or
    /// before prepare.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        let _cbs = self.lock("zvmm_guest_fd").ok()?;
        let fd = unsafe { sys::zvmm_guest_fd(self.raw.as_ptr()) };
        // Owned by the library until close (drop, &mut self).
        (fd >= 0).then(|| unsafe { BorrowedFd::borrow_raw(fd) })
    }

    /// Serves what is ready and returns at once. An error means the run
    /// must stop (a worker failed under a waiting vCPU).
    pub fn process(&self) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_process")?;
        check("zvmm_guest_process", unsafe {
            sys::zvmm_guest_process(self.raw.as_ptr())
        })
        .map(|_| ())
    }

    /// A thread of the library's serves first touches until
    /// [`Guest::exit`] or drop, instead of fd/process. Ok under prezero
    /// too (nothing to serve, no thread). EINVAL before prepare,
    /// EALREADY when started.
    pub fn serve_thread(&self) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_serve_thread")?;
        check("zvmm_guest_serve_thread", unsafe {
            sys::zvmm_guest_serve_thread(self.raw.as_ptr(), None, ptr::null_mut())
        })
        .map(|_| ())
    }

    /// [`Guest::serve_thread`] with @on_error, called from the serving
    /// thread if serving fails: tell the vCPUs to stop there, and call
    /// [`Guest::stop`] from another thread (from @on_error it is
    /// EDEADLK).
    pub fn serve_thread_with<F>(&self, on_error: F) -> Result<()>
    where
        F: Fn(Error) + Send + Sync + 'static,
    {
        unsafe extern "C" fn trampoline(arg: *mut c_void, err: c_int) {
            let f = &*(arg as *const Box<ErrorFn>);
            callback(|| f(Error::new("zvmm_guest_serve_thread", err)));
        }
        let mut cbs = self.lock("zvmm_guest_serve_thread")?;
        if cbs.on_error.is_some() {
            return Err(Error::new("zvmm_guest_serve_thread", libc::EALREADY));
        }
        let boxed: Box<Box<ErrorFn>> = Box::new(Box::new(on_error));
        let arg = &*boxed as *const Box<ErrorFn> as *mut c_void;
        let ret = unsafe { sys::zvmm_guest_serve_thread(self.raw.as_ptr(), Some(trampoline), arg) };
        // Kept even on failure: cheap, and whether the library kept the
        // pointer is its business until close.
        cbs.on_error = Some(boxed);
        check("zvmm_guest_serve_thread", ret).map(|_| ())
    }

    /// Stops all work within one chunk; stays cancelled until
    /// [`Guest::rearm`]. Any thread, any time (not from a signal
    /// handler).
    pub fn cancel(&self) {
        unsafe { sys::zvmm_guest_cancel(self.raw.as_ptr()) };
    }

    /// After a cancel ended the run, once no vCPU runs: lets exit work
    /// again.
    pub fn rearm(&self) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_rearm")?;
        unsafe { sys::zvmm_guest_rearm(self.raw.as_ptr()) };
        Ok(())
    }

    /// The run is over (the vCPUs are told to stop): from here a thread
    /// of the library serves every fault still coming; join the vCPU
    /// threads, then [`Guest::exit`]. Returns the serving thread's error,
    /// if any.
    pub fn stop(&self) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_stop")?;
        check("zvmm_guest_stop", unsafe { sys::zvmm_guest_stop(self.raw.as_ptr()) }).map(|_| ())
    }

    /// The guest has exited and no vCPU is left: serving ends, the
    /// guest mapping becomes PROT_NONE, then the policy's on_exit
    /// (release, keep, or scrub and record the pool). From here the
    /// memory is the pool's again: [`Guest::access`] is EINVAL and the
    /// vm-memory adapter finds no region.
    pub fn exit(&self) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_exit")?;
        self.exited.store(true, Ordering::Release);
        check("zvmm_guest_exit", unsafe { sys::zvmm_guest_exit(self.raw.as_ptr()) }).map(|_| ())
    }

    /// The memory as one file, for a VMM that runs as another process
    /// and maps a path (`zvmm_guest_file()`): the file, owned by the
    /// library, and the guest mapping's offset in it. Hand the VMM a file
    /// description of its own (open /proc/self/fd/N), never a dup; run it
    /// only under prezero and after [`Guest::prepare`], and call
    /// [`Guest::handed_back`] once it and its children have exited.
    /// EXDEV: a zvmmd lease of several chunks.
    pub fn file(&self) -> Result<(BorrowedFd<'_>, u64)> {
        let (mut fd, mut offset) = (-1, 0u64);
        check("zvmm_guest_file", unsafe {
            sys::zvmm_guest_file(self.raw.as_ptr(), &mut fd, &mut offset)
        })?;
        // Owned by the library until close (drop, &mut self).
        Ok((unsafe { BorrowedFd::borrow_raw(fd) }, offset))
    }

    /// Every process [`Guest::file`]'s file was handed to has exited
    /// (`zvmm_guest_handed_back()`). EBUSY: one still holds it, and
    /// on_exit then keeps the memory as it is, without a record.
    pub fn handed_back(&self) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_handed_back")?;
        check("zvmm_guest_handed_back", unsafe {
            sys::zvmm_guest_handed_back(self.raw.as_ptr())
        })
        .map(|_| ())
    }

    /// Without a guest: makes every page zero (a warm pool for the next
    /// launch).
    pub fn prezero(&self) -> Result<()> {
        let _cbs = self.lock("zvmm_guest_prezero")?;
        check("zvmm_guest_prezero", unsafe {
            sys::zvmm_guest_prezero(self.raw.as_ptr())
        })
        .map(|_| ())
    }

    /// @f(done, total) about ten times a second during the long passes
    /// (prezero, the prezero policy's prepare, on_exit's scrub), from
    /// the thread that made that call.
    pub fn set_progress<F>(&self, f: F) -> Result<()>
    where
        F: Fn(u64, u64) + Send + Sync + 'static,
    {
        unsafe extern "C" fn trampoline(arg: *mut c_void, done: u64, total: u64) {
            let f = &*(arg as *const Box<ProgressFn>);
            callback(|| f(done, total));
        }
        let mut cbs = self.lock("zvmm_guest_set_progress")?;
        let boxed: Box<Box<ProgressFn>> = Box::new(Box::new(f));
        let arg = &*boxed as *const Box<ProgressFn> as *mut c_void;
        unsafe { sys::zvmm_guest_set_progress(self.raw.as_ptr(), Some(trampoline), arg) };
        cbs.progress.push(boxed);
        Ok(())
    }

    /// What the zeroing did so far.
    pub fn stats(&self) -> Result<Stats> {
        let _cbs = self.lock("zvmm_guest_stats")?;
        let mut s: sys::zvmm_stats = unsafe { std::mem::zeroed() };
        unsafe { sys::zvmm_guest_stats(self.raw.as_ptr(), &mut s) };
        Ok(Stats(s))
    }

    /// The same as JSON, with the keys of `zvmm run --json`
    /// (docs/stats.schema.json).
    pub fn stats_json(&self) -> Result<String> {
        let _cbs = self.lock("zvmm_guest_stats_json")?;
        format_grow("zvmm_guest_stats_json", |buf, len| unsafe {
            sys::zvmm_guest_stats_json(self.raw.as_ptr(), buf, len)
        })
    }

    /// The C object, for calls these bindings do not wrap. Closing it is
    /// the Guest's drop.
    pub fn as_ptr(&self) -> *mut sys::zvmm_guest {
        self.raw.as_ptr()
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        // Joins the library's threads: after it no closure of
        // self.lifecycle runs, and they drop with the fields.
        unsafe { sys::zvmm_guest_close(self.raw.as_ptr()) };
    }
}

impl fmt::Debug for Guest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guest")
            .field("addr", &self.addr)
            .field("bytes", &self.bytes)
            .field("page_bytes", &self.page_bytes)
            .field("prepared", &self.is_prepared())
            .finish()
    }
}

/// What the zeroing did so far (`struct zvmm_stats`): its numbers are
/// the fields of [`sys::zvmm_stats`], reached through Deref; its texts
/// have methods.
#[derive(Clone, Copy)]
pub struct Stats(pub sys::zvmm_stats);

impl std::ops::Deref for Stats {
    type Target = sys::zvmm_stats;
    fn deref(&self) -> &sys::zvmm_stats {
        &self.0
    }
}

impl Stats {
    /// prezero, demand, hybrid.
    pub fn mode(&self) -> String {
        field_str(&self.0.mode)
    }
    /// The clearing backend, "none" if unused.
    pub fn backend(&self) -> String {
        field_str(&self.0.backend)
    }
    /// policy, profile, measured, none.
    pub fn backend_from(&self) -> String {
        field_str(&self.0.backend_from)
    }
    /// What on_exit did, "" before exit.
    pub fn on_exit(&self) -> String {
        field_str(&self.0.on_exit)
    }
}

impl fmt::Debug for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_keeps_the_errno() {
        let e = Error::new("zvmm_guest_open", -libc::EBUSY);
        assert_eq!(e.code(), -libc::EBUSY);
        assert_eq!(e.errno(), libc::EBUSY);
        assert_eq!(io::Error::from(e).raw_os_error(), Some(libc::EBUSY));
        assert!(e.to_string().starts_with("zvmm_guest_open: "));
    }

    #[test]
    fn field_str_stops_at_nul() {
        let mut chars = [0 as c_char; 8];
        for (c, b) in chars.iter_mut().zip(b"demand\0x") {
            *c = *b as c_char;
        }
        assert_eq!(field_str(&chars), "demand");
    }
}
