// SPDX-License-Identifier: MIT
// Generated from include/zvmm/zvmm.h by bindings/rust/sys-gen.sh: do
// not edit; run that script after changing the header (make
// rust-sys-check fails until it is run). bindgen 0.60.1,
// rustfmt 1.5.1-stable, options:
//   --allowlist-function 'zvmm_.*' --allowlist-type 'zvmm_.*' --allowlist-var 'ZVMM_.*' --size_t-is-usize --no-prepend-enum-name --rust-target 1.47

pub const ZVMM_VERSION_MAJOR: u32 = 0;
pub const ZVMM_VERSION_MINOR: u32 = 3;
pub const ZVMM_VERSION_PATCH: u32 = 0;
pub const ZVMM_VERSION: &[u8; 6usize] = b"0.3.0\0";
pub const ZVMM_PAGE_2M: u32 = 2097152;
pub const ZVMM_PAGE_1G: u32 = 1073741824;
pub const ZVMM_MEM_SERVICE: u32 = 1;
pub type __uint32_t = ::std::os::raw::c_uint;
pub type __uint64_t = ::std::os::raw::c_ulong;
extern "C" {
    pub fn zvmm_version() -> *const ::std::os::raw::c_char;
}
extern "C" {
    pub fn zvmm_check_version(
        major: ::std::os::raw::c_uint,
        minor: ::std::os::raw::c_uint,
    ) -> ::std::os::raw::c_int;
}
pub const ZVMM_LOG_ERROR: zvmm_log_level = 0;
pub const ZVMM_LOG_WARNING: zvmm_log_level = 1;
pub const ZVMM_LOG_INFO: zvmm_log_level = 2;
pub const ZVMM_LOG_DEBUG: zvmm_log_level = 3;
pub type zvmm_log_level = ::std::os::raw::c_uint;
pub type zvmm_log_fn = ::std::option::Option<
    unsafe extern "C" fn(
        arg: *mut ::std::os::raw::c_void,
        level: zvmm_log_level,
        msg: *const ::std::os::raw::c_char,
    ),
>;
extern "C" {
    pub fn zvmm_set_log(fn_: zvmm_log_fn, arg: *mut ::std::os::raw::c_void, max: zvmm_log_level);
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct zvmm_policy {
    _unused: [u8; 0],
}
extern "C" {
    pub fn zvmm_policy_new(out: *mut *mut zvmm_policy) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_policy_load(
        p: *mut zvmm_policy,
        path: *const ::std::os::raw::c_char,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_policy_set(
        p: *mut zvmm_policy,
        key: *const ::std::os::raw::c_char,
        value: *const ::std::os::raw::c_char,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_policy_format(
        p: *const zvmm_policy,
        buf: *mut ::std::os::raw::c_char,
        len: usize,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_policy_free(p: *mut zvmm_policy);
}
pub const ZVMM_SOURCE_AUTO: zvmm_source = 0;
pub const ZVMM_SOURCE_PRIVATE: zvmm_source = 1;
pub const ZVMM_SOURCE_POOL: zvmm_source = 2;
pub const ZVMM_SOURCE_FD: zvmm_source = 3;
pub const ZVMM_SOURCE_SERVICE: zvmm_source = 4;
pub type zvmm_source = ::std::os::raw::c_uint;
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct zvmm_mem {
    pub bytes: u64,
    pub page_bytes: u64,
    pub pool_path: *const ::std::os::raw::c_char,
    pub fd: ::std::os::raw::c_int,
    pub flags: u32,
    pub source: u32,
    pub reserved32: u32,
    pub service_path: *const ::std::os::raw::c_char,
    pub reserved: [u64; 4usize],
}
#[test]
fn bindgen_test_layout_zvmm_mem() {
    assert_eq!(
        ::std::mem::size_of::<zvmm_mem>(),
        80usize,
        concat!("Size of: ", stringify!(zvmm_mem))
    );
    assert_eq!(
        ::std::mem::align_of::<zvmm_mem>(),
        8usize,
        concat!("Alignment of ", stringify!(zvmm_mem))
    );
    fn test_field_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_mem>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).bytes) as usize - ptr as usize
            },
            0usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_mem),
                "::",
                stringify!(bytes)
            )
        );
    }
    test_field_bytes();
    fn test_field_page_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_mem>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).page_bytes) as usize - ptr as usize
            },
            8usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_mem),
                "::",
                stringify!(page_bytes)
            )
        );
    }
    test_field_page_bytes();
    fn test_field_pool_path() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_mem>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).pool_path) as usize - ptr as usize
            },
            16usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_mem),
                "::",
                stringify!(pool_path)
            )
        );
    }
    test_field_pool_path();
    fn test_field_fd() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_mem>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fd) as usize - ptr as usize
            },
            24usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_mem),
                "::",
                stringify!(fd)
            )
        );
    }
    test_field_fd();
    fn test_field_flags() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_mem>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).flags) as usize - ptr as usize
            },
            28usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_mem),
                "::",
                stringify!(flags)
            )
        );
    }
    test_field_flags();
    fn test_field_source() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_mem>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).source) as usize - ptr as usize
            },
            32usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_mem),
                "::",
                stringify!(source)
            )
        );
    }
    test_field_source();
    fn test_field_reserved32() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_mem>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).reserved32) as usize - ptr as usize
            },
            36usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_mem),
                "::",
                stringify!(reserved32)
            )
        );
    }
    test_field_reserved32();
    fn test_field_service_path() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_mem>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).service_path) as usize - ptr as usize
            },
            40usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_mem),
                "::",
                stringify!(service_path)
            )
        );
    }
    test_field_service_path();
    fn test_field_reserved() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_mem>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).reserved) as usize - ptr as usize
            },
            48usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_mem),
                "::",
                stringify!(reserved)
            )
        );
    }
    test_field_reserved();
}
extern "C" {
    pub fn zvmm_mem_init(m: *mut zvmm_mem, bytes: u64, page_bytes: u64);
}
extern "C" {
    pub fn zvmm_mem_check(mem: *const zvmm_mem) -> ::std::os::raw::c_int;
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct zvmm_reservation {
    _unused: [u8; 0],
}
extern "C" {
    pub fn zvmm_hugepages_reserve(
        page_bytes: u64,
        nr: u64,
        out: *mut *mut zvmm_reservation,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_hugepages_release(r: *mut zvmm_reservation);
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct zvmm_backend_info {
    pub name: [::std::os::raw::c_char; 24usize],
    pub needs: [::std::os::raw::c_char; 64usize],
    pub what: [::std::os::raw::c_char; 96usize],
    pub runs_here: bool,
    pub reserved: [u64; 4usize],
}
#[test]
fn bindgen_test_layout_zvmm_backend_info() {
    assert_eq!(
        ::std::mem::size_of::<zvmm_backend_info>(),
        224usize,
        concat!("Size of: ", stringify!(zvmm_backend_info))
    );
    assert_eq!(
        ::std::mem::align_of::<zvmm_backend_info>(),
        8usize,
        concat!("Alignment of ", stringify!(zvmm_backend_info))
    );
    fn test_field_name() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_backend_info>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).name) as usize - ptr as usize
            },
            0usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_backend_info),
                "::",
                stringify!(name)
            )
        );
    }
    test_field_name();
    fn test_field_needs() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_backend_info>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).needs) as usize - ptr as usize
            },
            24usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_backend_info),
                "::",
                stringify!(needs)
            )
        );
    }
    test_field_needs();
    fn test_field_what() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_backend_info>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).what) as usize - ptr as usize
            },
            88usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_backend_info),
                "::",
                stringify!(what)
            )
        );
    }
    test_field_what();
    fn test_field_runs_here() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_backend_info>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).runs_here) as usize - ptr as usize
            },
            184usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_backend_info),
                "::",
                stringify!(runs_here)
            )
        );
    }
    test_field_runs_here();
    fn test_field_reserved() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_backend_info>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).reserved) as usize - ptr as usize
            },
            192usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_backend_info),
                "::",
                stringify!(reserved)
            )
        );
    }
    test_field_reserved();
}
extern "C" {
    pub fn zvmm_backends(
        out: *mut zvmm_backend_info,
        max: ::std::os::raw::c_uint,
    ) -> ::std::os::raw::c_uint;
}
extern "C" {
    pub fn zvmm_arch() -> *const ::std::os::raw::c_char;
}
extern "C" {
    pub fn zvmm_cpu_features(buf: *mut ::std::os::raw::c_char, len: usize);
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct zvmm_calibration {
    _unused: [u8; 0],
}
extern "C" {
    pub fn zvmm_calibrate(out: *mut *mut zvmm_calibration) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_calibration_chunks(c: *const zvmm_calibration) -> ::std::os::raw::c_uint;
}
extern "C" {
    pub fn zvmm_calibration_chunk(c: *const zvmm_calibration, i: ::std::os::raw::c_uint) -> u64;
}
extern "C" {
    pub fn zvmm_calibration_gbps(
        c: *const zvmm_calibration,
        i: ::std::os::raw::c_uint,
        name: *const ::std::os::raw::c_char,
    ) -> f64;
}
extern "C" {
    pub fn zvmm_calibration_best(
        c: *const zvmm_calibration,
        i: ::std::os::raw::c_uint,
    ) -> *const ::std::os::raw::c_char;
}
extern "C" {
    pub fn zvmm_calibration_write(
        c: *const zvmm_calibration,
        path: *const ::std::os::raw::c_char,
        written: *mut ::std::os::raw::c_char,
        written_len: usize,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_calibration_format(
        c: *const zvmm_calibration,
        buf: *mut ::std::os::raw::c_char,
        len: usize,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_calibration_free(c: *mut zvmm_calibration);
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct zvmm_guest {
    _unused: [u8; 0],
}
extern "C" {
    pub fn zvmm_guest_open(
        mem: *const zvmm_mem,
        pol: *const zvmm_policy,
        out: *mut *mut zvmm_guest,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_memory(
        g: *const zvmm_guest,
        addr: *mut *mut ::std::os::raw::c_void,
        bytes: *mut u64,
    );
}
pub type zvmm_guest_log_fn = ::std::option::Option<
    unsafe extern "C" fn(
        arg: *mut ::std::os::raw::c_void,
        g: *mut zvmm_guest,
        level: zvmm_log_level,
        msg: *const ::std::os::raw::c_char,
    ),
>;
extern "C" {
    pub fn zvmm_guest_set_log(
        g: *mut zvmm_guest,
        fn_: zvmm_guest_log_fn,
        arg: *mut ::std::os::raw::c_void,
        max: zvmm_log_level,
    );
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct zvmm_layout {
    pub fd: ::std::os::raw::c_int,
    pub offset: u64,
    pub bytes: u64,
    pub page_bytes: u64,
    pub addr: *mut ::std::os::raw::c_void,
    pub reserved: [u64; 8usize],
}
#[test]
fn bindgen_test_layout_zvmm_layout() {
    assert_eq!(
        ::std::mem::size_of::<zvmm_layout>(),
        104usize,
        concat!("Size of: ", stringify!(zvmm_layout))
    );
    assert_eq!(
        ::std::mem::align_of::<zvmm_layout>(),
        8usize,
        concat!("Alignment of ", stringify!(zvmm_layout))
    );
    fn test_field_fd() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_layout>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fd) as usize - ptr as usize
            },
            0usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_layout),
                "::",
                stringify!(fd)
            )
        );
    }
    test_field_fd();
    fn test_field_offset() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_layout>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).offset) as usize - ptr as usize
            },
            8usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_layout),
                "::",
                stringify!(offset)
            )
        );
    }
    test_field_offset();
    fn test_field_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_layout>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).bytes) as usize - ptr as usize
            },
            16usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_layout),
                "::",
                stringify!(bytes)
            )
        );
    }
    test_field_bytes();
    fn test_field_page_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_layout>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).page_bytes) as usize - ptr as usize
            },
            24usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_layout),
                "::",
                stringify!(page_bytes)
            )
        );
    }
    test_field_page_bytes();
    fn test_field_addr() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_layout>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).addr) as usize - ptr as usize
            },
            32usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_layout),
                "::",
                stringify!(addr)
            )
        );
    }
    test_field_addr();
    fn test_field_reserved() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_layout>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).reserved) as usize - ptr as usize
            },
            40usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_layout),
                "::",
                stringify!(reserved)
            )
        );
    }
    test_field_reserved();
}
extern "C" {
    pub fn zvmm_guest_layout(g: *const zvmm_guest, out: *mut zvmm_layout);
}
extern "C" {
    pub fn zvmm_guest_prepare(g: *mut zvmm_guest, boot_bytes: u64) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_access(g: *mut zvmm_guest, offset: u64, bytes: u64) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_start(g: *mut zvmm_guest);
}
extern "C" {
    pub fn zvmm_guest_fd(g: *const zvmm_guest) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_process(g: *mut zvmm_guest) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_serve_thread(
        g: *mut zvmm_guest,
        on_error: ::std::option::Option<
            unsafe extern "C" fn(arg: *mut ::std::os::raw::c_void, err: ::std::os::raw::c_int),
        >,
        arg: *mut ::std::os::raw::c_void,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_cancel(g: *mut zvmm_guest);
}
extern "C" {
    pub fn zvmm_guest_rearm(g: *mut zvmm_guest);
}
extern "C" {
    pub fn zvmm_guest_stop(g: *mut zvmm_guest) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_exit(g: *mut zvmm_guest) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_file(
        g: *const zvmm_guest,
        fd: *mut ::std::os::raw::c_int,
        offset: *mut u64,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_handed_back(g: *mut zvmm_guest) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_prezero(g: *mut zvmm_guest) -> ::std::os::raw::c_int;
}
pub type zvmm_progress_fn = ::std::option::Option<
    unsafe extern "C" fn(arg: *mut ::std::os::raw::c_void, done: u64, total: u64),
>;
extern "C" {
    pub fn zvmm_guest_set_progress(
        g: *mut zvmm_guest,
        fn_: zvmm_progress_fn,
        arg: *mut ::std::os::raw::c_void,
    );
}
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct zvmm_stats {
    pub mode: [::std::os::raw::c_char; 16usize],
    pub backend: [::std::os::raw::c_char; 24usize],
    pub backend_from: [::std::os::raw::c_char; 16usize],
    pub workers: ::std::os::raw::c_uint,
    pub chunk_bytes: u64,
    pub bytes: u64,
    pub page_bytes: u64,
    pub pages: u64,
    pub zero_pages: u64,
    pub dirty_pages: u64,
    pub open_ms: f64,
    pub open_memory_ms: f64,
    pub open_record_ms: f64,
    pub open_engine_ms: f64,
    pub prezero_scrub_bytes: u64,
    pub prezero_populate_bytes: u64,
    pub prezero_seconds: f64,
    pub prezero_gbps: f64,
    pub faults: u64,
    pub fault_pages: u64,
    pub fault_scrubbed_pages: u64,
    pub ahead_pages: u64,
    pub fault_bytes: u64,
    pub fault_p50_us: f64,
    pub fault_p99_us: f64,
    pub fault_max_us: f64,
    pub busy_faults: u64,
    pub busy_p50_us: f64,
    pub busy_p99_us: f64,
    pub busy_max_us: f64,
    pub background_bytes: u64,
    pub background_seconds: f64,
    pub background_active: bool,
    pub pool: bool,
    pub record_clean: bool,
    pub record_written: bool,
    pub on_exit: [::std::os::raw::c_char; 16usize],
    pub exit_bytes: u64,
    pub exit_seconds: f64,
    pub foreign_pages: u64,
    pub fault_populated_pages: u64,
    pub fault_populate_bytes: u64,
    pub service_zero_bytes: u64,
    pub service_empty_bytes: u64,
    pub reserved: [u64; 11usize],
}
#[test]
fn bindgen_test_layout_zvmm_stats() {
    assert_eq!(
        ::std::mem::size_of::<zvmm_stats>(),
        456usize,
        concat!("Size of: ", stringify!(zvmm_stats))
    );
    assert_eq!(
        ::std::mem::align_of::<zvmm_stats>(),
        8usize,
        concat!("Alignment of ", stringify!(zvmm_stats))
    );
    fn test_field_mode() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).mode) as usize - ptr as usize
            },
            0usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(mode)
            )
        );
    }
    test_field_mode();
    fn test_field_backend() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).backend) as usize - ptr as usize
            },
            16usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(backend)
            )
        );
    }
    test_field_backend();
    fn test_field_backend_from() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).backend_from) as usize - ptr as usize
            },
            40usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(backend_from)
            )
        );
    }
    test_field_backend_from();
    fn test_field_workers() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).workers) as usize - ptr as usize
            },
            56usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(workers)
            )
        );
    }
    test_field_workers();
    fn test_field_chunk_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).chunk_bytes) as usize - ptr as usize
            },
            64usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(chunk_bytes)
            )
        );
    }
    test_field_chunk_bytes();
    fn test_field_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).bytes) as usize - ptr as usize
            },
            72usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(bytes)
            )
        );
    }
    test_field_bytes();
    fn test_field_page_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).page_bytes) as usize - ptr as usize
            },
            80usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(page_bytes)
            )
        );
    }
    test_field_page_bytes();
    fn test_field_pages() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).pages) as usize - ptr as usize
            },
            88usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(pages)
            )
        );
    }
    test_field_pages();
    fn test_field_zero_pages() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).zero_pages) as usize - ptr as usize
            },
            96usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(zero_pages)
            )
        );
    }
    test_field_zero_pages();
    fn test_field_dirty_pages() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).dirty_pages) as usize - ptr as usize
            },
            104usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(dirty_pages)
            )
        );
    }
    test_field_dirty_pages();
    fn test_field_open_ms() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).open_ms) as usize - ptr as usize
            },
            112usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(open_ms)
            )
        );
    }
    test_field_open_ms();
    fn test_field_open_memory_ms() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).open_memory_ms) as usize - ptr as usize
            },
            120usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(open_memory_ms)
            )
        );
    }
    test_field_open_memory_ms();
    fn test_field_open_record_ms() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).open_record_ms) as usize - ptr as usize
            },
            128usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(open_record_ms)
            )
        );
    }
    test_field_open_record_ms();
    fn test_field_open_engine_ms() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).open_engine_ms) as usize - ptr as usize
            },
            136usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(open_engine_ms)
            )
        );
    }
    test_field_open_engine_ms();
    fn test_field_prezero_scrub_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).prezero_scrub_bytes) as usize - ptr as usize
            },
            144usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(prezero_scrub_bytes)
            )
        );
    }
    test_field_prezero_scrub_bytes();
    fn test_field_prezero_populate_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).prezero_populate_bytes) as usize - ptr as usize
            },
            152usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(prezero_populate_bytes)
            )
        );
    }
    test_field_prezero_populate_bytes();
    fn test_field_prezero_seconds() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).prezero_seconds) as usize - ptr as usize
            },
            160usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(prezero_seconds)
            )
        );
    }
    test_field_prezero_seconds();
    fn test_field_prezero_gbps() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).prezero_gbps) as usize - ptr as usize
            },
            168usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(prezero_gbps)
            )
        );
    }
    test_field_prezero_gbps();
    fn test_field_faults() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).faults) as usize - ptr as usize
            },
            176usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(faults)
            )
        );
    }
    test_field_faults();
    fn test_field_fault_pages() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fault_pages) as usize - ptr as usize
            },
            184usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(fault_pages)
            )
        );
    }
    test_field_fault_pages();
    fn test_field_fault_scrubbed_pages() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fault_scrubbed_pages) as usize - ptr as usize
            },
            192usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(fault_scrubbed_pages)
            )
        );
    }
    test_field_fault_scrubbed_pages();
    fn test_field_ahead_pages() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).ahead_pages) as usize - ptr as usize
            },
            200usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(ahead_pages)
            )
        );
    }
    test_field_ahead_pages();
    fn test_field_fault_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fault_bytes) as usize - ptr as usize
            },
            208usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(fault_bytes)
            )
        );
    }
    test_field_fault_bytes();
    fn test_field_fault_p50_us() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fault_p50_us) as usize - ptr as usize
            },
            216usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(fault_p50_us)
            )
        );
    }
    test_field_fault_p50_us();
    fn test_field_fault_p99_us() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fault_p99_us) as usize - ptr as usize
            },
            224usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(fault_p99_us)
            )
        );
    }
    test_field_fault_p99_us();
    fn test_field_fault_max_us() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fault_max_us) as usize - ptr as usize
            },
            232usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(fault_max_us)
            )
        );
    }
    test_field_fault_max_us();
    fn test_field_busy_faults() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).busy_faults) as usize - ptr as usize
            },
            240usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(busy_faults)
            )
        );
    }
    test_field_busy_faults();
    fn test_field_busy_p50_us() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).busy_p50_us) as usize - ptr as usize
            },
            248usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(busy_p50_us)
            )
        );
    }
    test_field_busy_p50_us();
    fn test_field_busy_p99_us() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).busy_p99_us) as usize - ptr as usize
            },
            256usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(busy_p99_us)
            )
        );
    }
    test_field_busy_p99_us();
    fn test_field_busy_max_us() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).busy_max_us) as usize - ptr as usize
            },
            264usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(busy_max_us)
            )
        );
    }
    test_field_busy_max_us();
    fn test_field_background_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).background_bytes) as usize - ptr as usize
            },
            272usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(background_bytes)
            )
        );
    }
    test_field_background_bytes();
    fn test_field_background_seconds() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).background_seconds) as usize - ptr as usize
            },
            280usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(background_seconds)
            )
        );
    }
    test_field_background_seconds();
    fn test_field_background_active() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).background_active) as usize - ptr as usize
            },
            288usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(background_active)
            )
        );
    }
    test_field_background_active();
    fn test_field_pool() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).pool) as usize - ptr as usize
            },
            289usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(pool)
            )
        );
    }
    test_field_pool();
    fn test_field_record_clean() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).record_clean) as usize - ptr as usize
            },
            290usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(record_clean)
            )
        );
    }
    test_field_record_clean();
    fn test_field_record_written() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).record_written) as usize - ptr as usize
            },
            291usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(record_written)
            )
        );
    }
    test_field_record_written();
    fn test_field_on_exit() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).on_exit) as usize - ptr as usize
            },
            292usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(on_exit)
            )
        );
    }
    test_field_on_exit();
    fn test_field_exit_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).exit_bytes) as usize - ptr as usize
            },
            312usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(exit_bytes)
            )
        );
    }
    test_field_exit_bytes();
    fn test_field_exit_seconds() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).exit_seconds) as usize - ptr as usize
            },
            320usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(exit_seconds)
            )
        );
    }
    test_field_exit_seconds();
    fn test_field_foreign_pages() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).foreign_pages) as usize - ptr as usize
            },
            328usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(foreign_pages)
            )
        );
    }
    test_field_foreign_pages();
    fn test_field_fault_populated_pages() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fault_populated_pages) as usize - ptr as usize
            },
            336usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(fault_populated_pages)
            )
        );
    }
    test_field_fault_populated_pages();
    fn test_field_fault_populate_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).fault_populate_bytes) as usize - ptr as usize
            },
            344usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(fault_populate_bytes)
            )
        );
    }
    test_field_fault_populate_bytes();
    fn test_field_service_zero_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).service_zero_bytes) as usize - ptr as usize
            },
            352usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(service_zero_bytes)
            )
        );
    }
    test_field_service_zero_bytes();
    fn test_field_service_empty_bytes() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).service_empty_bytes) as usize - ptr as usize
            },
            360usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(service_empty_bytes)
            )
        );
    }
    test_field_service_empty_bytes();
    fn test_field_reserved() {
        assert_eq!(
            unsafe {
                let uninit = ::std::mem::MaybeUninit::<zvmm_stats>::uninit();
                let ptr = uninit.as_ptr();
                ::std::ptr::addr_of!((*ptr).reserved) as usize - ptr as usize
            },
            368usize,
            concat!(
                "Offset of field: ",
                stringify!(zvmm_stats),
                "::",
                stringify!(reserved)
            )
        );
    }
    test_field_reserved();
}
extern "C" {
    pub fn zvmm_guest_stats(g: *mut zvmm_guest, s: *mut zvmm_stats);
}
extern "C" {
    pub fn zvmm_guest_stats_json(
        g: *mut zvmm_guest,
        buf: *mut ::std::os::raw::c_char,
        len: usize,
    ) -> ::std::os::raw::c_int;
}
extern "C" {
    pub fn zvmm_guest_close(g: *mut zvmm_guest);
}
