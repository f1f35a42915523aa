/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZVMM_H
#define ZVMM_ZVMM_H

/*
 * libzvmm: zvmm's zeroing engine for a VMM to embed. It owns a guest's
 * hugepage memory from open to close and keeps one promise: the guest
 * never reads a byte that anyone else wrote, and nothing the guest
 * wrote is changed while it runs.
 *
 *   zvmm_guest_open()      lock and map the memory, classify its pages
 *   zvmm_guest_memory()    the mapping to give KVM (a memslot)
 *   zvmm_guest_prepare()   the policy's work before the first vCPU runs
 *   zvmm_guest_access()    any other range the VMM writes (initrd, DTB)
 *   zvmm_guest_serve_thread()  our thread serves first touches
 *                          (or zvmm_guest_fd() + zvmm_guest_process()
 *                          from your event loop)
 *   zvmm_guest_start()     the vCPUs run: hybrid's background starts
 *   zvmm_guest_stop()      the run is over: call it once, join the vCPU
 *                          threads (kick them out of KVM_RUN yourself)
 *   zvmm_guest_exit()      the guest is gone: the policy's on_exit
 *   zvmm_guest_close()     unmap, unlock
 *
 * Every function returns 0 (or a count) on success and a negative errno
 * on failure; what went wrong, and what to do, goes to the log callback
 * (zvmm_set_log()), never to stdout or stderr. The library never exits
 * the process. Thread safety is stated per function: unless a function
 * says otherwise, calls on one struct zvmm_guest come from one thread at
 * a time, in the order above.
 *
 * Threads: a guest's worker pool (the policy's zeroing.workers, by
 * default one per CPU), each pinned to one CPU of its node unless the
 * policy says [numa] pin = none; a serving thread for
 * zvmm_guest_serve_thread() and from zvmm_guest_stop() on; the threads
 * of [pool] record = verify while it reads. Every one of them blocks all
 * signals: the VMM's signals are delivered to the VMM's threads alone.
 *
 * Guest memory is hugetlb memory: 2 MiB or 1 GiB pages that the kernel
 * has reserved (nr_hugepages). Demand and hybrid policies serve a
 * vCPU's first touch of a page through a userfaultfd that handles kernel
 * faults: from /dev/userfaultfd (Linux 6.1+; read-write access, e.g. by
 * group) first, else userfaultfd(2) (CAP_SYS_PTRACE, or
 * vm.unprivileged_userfaultfd = 1). No root is needed otherwise, except
 * to add hugepages (zvmm_hugepages_reserve()).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZVMM_VERSION_MAJOR 0
#define ZVMM_VERSION_MINOR 3
#define ZVMM_VERSION_PATCH 0
#define ZVMM_VERSION "0.3.0"

#if defined(__GNUC__) && !defined(ZVMM_STATIC)
#define ZVMM_API __attribute__((visibility("default")))
#else
#define ZVMM_API
#endif

/* The library's version, "MAJOR.MINOR.PATCH": may differ from the
 * header's ZVMM_VERSION when the shared library was upgraded. Any
 * thread. */
ZVMM_API const char *zvmm_version(void);

/*
 * Whether the library that runs has the API of release @major.@minor
 * that a program was built against: call it once at start, after
 * zvmm_set_log() (its message goes there), with ZVMM_VERSION_MAJOR and
 * ZVMM_VERSION_MINOR. 0 when it has (same major,
 * this minor or later), else -ENOTSUP with the two versions logged.
 * Since 0.2. Any thread.
 */
ZVMM_API int zvmm_check_version(unsigned int major, unsigned int minor);

/* ---------------------------------------------------------------- log */

enum zvmm_log_level {
	ZVMM_LOG_ERROR,
	ZVMM_LOG_WARNING,
	ZVMM_LOG_INFO,
	ZVMM_LOG_DEBUG,
};

/* @msg is one line without a newline, valid during the call only. */
typedef void zvmm_log_fn(void *arg, enum zvmm_log_level level, const char *msg);

/*
 * Sends the library's messages up to @max to @fn (NULL: nowhere, the
 * default). Process-wide; call it before the first zvmm_guest_open().
 * @fn may be called from the library's threads, so it must be
 * thread-safe.
 */
ZVMM_API void zvmm_set_log(zvmm_log_fn *fn, void *arg, enum zvmm_log_level max);

/* ------------------------------------------------------------- policy */

/*
 * A zeroing policy: the keys of zvmm.conf(5) ([zeroing] mode, backend,
 * workers, chunk, rate_limit, profile; [pool] fresh, on_exit, record,
 * state_dir; [numa] policy, nodes, pin). A new policy holds the defaults (hybrid, backend auto). One
 * thread at a time per policy; a policy may be freed once
 * zvmm_guest_open() returned.
 */
struct zvmm_policy;

ZVMM_API int zvmm_policy_new(struct zvmm_policy **out);

/*
 * Reads a policy file over @p. -EINVAL when the file is malformed (the
 * log says file:line and the fix), -errno when it cannot be read. @p is
 * unchanged on failure.
 */
ZVMM_API int zvmm_policy_load(struct zvmm_policy *p, const char *path);

/*
 * Sets one key, named "section.key" ("zeroing.mode", "pool.on_exit"),
 * to @value as the file would. -EINVAL for an unknown key or a bad
 * value, @p unchanged.
 */
ZVMM_API int zvmm_policy_set(struct zvmm_policy *p, const char *key,
			     const char *value);

/*
 * Writes @p as a policy file into @buf (NUL-terminated). Returns the
 * length, or -ENOSPC when @len is too short (nothing useful written).
 */
ZVMM_API int zvmm_policy_format(const struct zvmm_policy *p, char *buf,
				size_t len);

/* Accepts NULL. */
ZVMM_API void zvmm_policy_free(struct zvmm_policy *p);

/* ------------------------------------------------------------- memory */

#define ZVMM_PAGE_2M (2ULL << 20)
#define ZVMM_PAGE_1G (1ULL << 30)

/*
 * Guest memory comes from one source (since 0.3, mem.source):
 *  - ZVMM_SOURCE_PRIVATE: an anonymous hugetlb memfd the library makes,
 *    fresh, gone at close;
 *  - ZVMM_SOURCE_POOL: pool_path, a file on a hugetlbfs mount of
 *    page_bytes pages, created when missing, kept warm between launches
 *    (see [pool] in zvmm.conf(5));
 *  - ZVMM_SOURCE_FD: fd, a hugetlb file the caller opened (on hugetlbfs,
 *    or a memfd made with MFD_HUGETLB), treated as a pool: any page it
 *    holds is someone else's data until made zero, at every open (no
 *    state record vouches for a file the caller can write between
 *    launches). The library duplicates the fd; the caller keeps and
 *    closes its own;
 *  - ZVMM_SOURCE_SERVICE: leased from zvmmd, the host's zeroing service
 *    (zvmmd(8)), whose socket service_path names (NULL:
 *    /run/zvmm/zvmmd.sock): chunks it zeroed ahead of time, and, when it
 *    has too few, chunks the kernel zeroes at first touch (zvmm_stats
 *    says how much of each). The lease ends at zvmm_guest_close().
 * Each field means one thing: only the source's own field is set (fd -1
 * otherwise). ZVMM_SOURCE_AUTO (0, what zvmm_mem_init() leaves) takes
 * the source the one field set names, private when none is; two set is
 * -EINVAL. A pool is locked (flock(2)) while open: a second open fails
 * -EBUSY.
 */
enum zvmm_source {
	ZVMM_SOURCE_AUTO = 0,
	ZVMM_SOURCE_PRIVATE = 1,
	ZVMM_SOURCE_POOL = 2,
	ZVMM_SOURCE_FD = 3,
	ZVMM_SOURCE_SERVICE = 4,
};

/*
 * flags: ZVMM_MEM_SERVICE is 0.2's way to say ZVMM_SOURCE_SERVICE (since
 * 0.2), kept for programs written for it: with it, and no service_path,
 * pool_path is read as zvmmd's socket, as 0.2 read it. New code sets
 * source = ZVMM_SOURCE_SERVICE and service_path instead.
 */
#define ZVMM_MEM_SERVICE (1u << 0)

struct zvmm_mem {
	uint64_t bytes; /* a multiple of page_bytes */
	uint64_t page_bytes; /* ZVMM_PAGE_2M or ZVMM_PAGE_1G */
	const char *pool_path; /* ZVMM_SOURCE_POOL: the pool file */
	int fd; /* ZVMM_SOURCE_FD: the caller's file; -1: none */
	uint32_t flags; /* ZVMM_MEM_*, 0: none (since 0.2) */
	uint32_t source; /* enum zvmm_source (since 0.3) */
	uint32_t reserved32; /* zero (since 0.3) */
	/* ZVMM_SOURCE_SERVICE: zvmmd's socket, NULL: the default (since 0.3) */
	const char *service_path;
	uint64_t reserved[4]; /* zero; room for fields to come (since 0.2) */
};

/*
 * Sets @m to @bytes of @page_bytes pages in an anonymous memfd: no pool
 * path, fd -1 (a zeroed struct would say fd 0, standard input), flags
 * and reserved zero. For C++ and bindings, where the macro below is no
 * expression. Since 0.2.
 *
 * ABI: fields to come take reserved space, zero meaning what the library
 * did before them; a struct whose flags or reserved words this library
 * does not know is refused with -EINVAL. Programs built against 0.1
 * (whose struct ended at fd) and 0.2 (whose source and service_path were
 * reserved, and whose ZVMM_MEM_SERVICE read pool_path as the socket)
 * keep working: the library has their functions under symbol versions
 * ZVMM_0 and ZVMM_0.2. A binding that looks functions up at run time
 * asks for the version it was written for: dlvsym(h, "zvmm_guest_open",
 * "ZVMM_0.3") (plain dlsym() finds the newest).
 */
ZVMM_API void zvmm_mem_init(struct zvmm_mem *m, uint64_t bytes,
			    uint64_t page_bytes);

#ifndef __cplusplus
/* The same as an initialiser (C99 compound literal). */
#define ZVMM_MEM_INIT(size, page) \
	((struct zvmm_mem){ .bytes = (size), .page_bytes = (page), .fd = -1 })
#endif

/*
 * Checks that @mem can be had before anything is taken: sizes, the
 * mount, enough free hugepages, a pool held by another launch. 0, or a
 * negative errno with the reason logged. Any thread.
 */
ZVMM_API int zvmm_mem_check(const struct zvmm_mem *mem);

/*
 * Raises the kernel's hugepage pool by what @nr pages of @page_bytes
 * still need (root only: -EACCES otherwise; -ENOMEM when the kernel
 * cannot find them, the pool put back). zvmm_hugepages_release() puts
 * back what this reservation added.
 */
struct zvmm_reservation;
ZVMM_API int zvmm_hugepages_reserve(uint64_t page_bytes, uint64_t nr,
				    struct zvmm_reservation **out);
ZVMM_API void zvmm_hugepages_release(struct zvmm_reservation *r);

/* ----------------------------------------------------------- backends */

/*
 * The clearing backends this library has (REP STOSB, non-temporal
 * stores, CLZERO, DC ZVA, ...), in registry order. Any thread.
 */
struct zvmm_backend_info {
	char name[24];
	char needs[64]; /* CPU features it needs, space separated, "none" */
	char what[96]; /* one line saying what it is */
	bool runs_here; /* this CPU has what it needs */
	uint64_t reserved[4]; /* zero; room for fields to come (since 0.2) */
};

/* The number of backends; fills @out[0..max) with the first of them. */
ZVMM_API unsigned int zvmm_backends(struct zvmm_backend_info *out,
				    unsigned int max);

/* This machine's architecture ("x86-64", "arm64"). */
ZVMM_API const char *zvmm_arch(void);

/* The CPU features the backends care about: "sse2 avx2 erms ...". */
ZVMM_API void zvmm_cpu_features(char *buf, size_t len);

/*
 * Calibration: every backend that runs here measured on 256 MiB of warm
 * memory at the chunk sizes the engine uses (256K to 8M), median of 5.
 * It takes a few seconds; `backend = auto` reads the profile it writes
 * instead of measuring at launch. One thread per calibration.
 */
struct zvmm_calibration;

/* Measures. -ENOMEM when the 256 MiB cannot be had. */
ZVMM_API int zvmm_calibrate(struct zvmm_calibration **out);

/* The chunk sizes measured, and each backend's GB/s at chunk @i (0 when
 * it does not run here or @name is unknown); the best backend's name. */
ZVMM_API unsigned int zvmm_calibration_chunks(const struct zvmm_calibration *c);
ZVMM_API uint64_t zvmm_calibration_chunk(const struct zvmm_calibration *c,
					 unsigned int i);
ZVMM_API double zvmm_calibration_gbps(const struct zvmm_calibration *c,
				      unsigned int i, const char *name);
ZVMM_API const char *zvmm_calibration_best(const struct zvmm_calibration *c,
					   unsigned int i);

/*
 * Writes the profile atomically to @path; NULL: this machine's profile
 * (calibration.ini in /var/cache/zvmm for root, else $XDG_CACHE_HOME/zvmm
 * or ~/.cache/zvmm), its directory made. The library reads no ZVMM_*
 * variable: the zvmm program's $ZVMM_CACHE_DIR and $ZVMM_STATE_DIR are
 * its own, and a VMM names directories per guest with the policy keys
 * zeroing.profile and pool.state_dir.
 * @written, when not NULL, gets the path used (PATH_MAX bytes).
 */
ZVMM_API int zvmm_calibration_write(const struct zvmm_calibration *c,
				    const char *path, char *written,
				    size_t written_len);

/* The profile's text into @buf: its length, or -ENOSPC. */
ZVMM_API int zvmm_calibration_format(const struct zvmm_calibration *c,
				     char *buf, size_t len);

/* Accepts NULL. */
ZVMM_API void zvmm_calibration_free(struct zvmm_calibration *c);

/* -------------------------------------------------------------- guest */

struct zvmm_guest;

/*
 * Opens @mem under @pol: locks a pool, maps it, classifies every page
 * (zero, someone's data, or a hole the kernel zeroes), starts the
 * policy's workers. Nothing is mapped into the guest yet. 0, or a
 * negative errno (-EBUSY: the pool is in use; -ENOMEM: hugepages
 * short) with nothing left behind.
 */
ZVMM_API int zvmm_guest_open(const struct zvmm_mem *mem,
			     const struct zvmm_policy *pol,
			     struct zvmm_guest **out);

/*
 * The guest mapping: give [*addr, *addr + *bytes) to KVM as guest
 * memory (KVM_SET_USER_MEMORY_REGION). Mapped until zvmm_guest_close(),
 * and PROT_NONE from zvmm_guest_exit() on: no thread touches it then.
 * Never read or write it from the VMM before zvmm_guest_prepare(): a
 * write there is the guest's, and a read may wait for a fault that no
 * one serves.
 */
ZVMM_API void zvmm_guest_memory(const struct zvmm_guest *g, void **addr,
				uint64_t *bytes);

/*
 * A log of one guest's own, for a process that runs several: from this
 * call on, the messages of @g's calls and of its serving thread go to @fn
 * with @arg and @g, up to level @max, instead of zvmm_set_log()'s
 * callback. NULL goes back to that one. Messages of zvmm_guest_open()
 * itself (there is no guest yet when it fails) go to zvmm_set_log()'s.
 * From the thread that makes the lifecycle calls. Since 0.2.
 */
typedef void zvmm_guest_log_fn(void *arg, struct zvmm_guest *g,
			       enum zvmm_log_level level, const char *msg);
ZVMM_API void zvmm_guest_set_log(struct zvmm_guest *g, zvmm_guest_log_fn *fn,
				 void *arg, enum zvmm_log_level max);

/*
 * Where the guest memory lives, for a VMM that shares it (vhost-user
 * backends, virtiofs DAX, a snapshot writer) or splits it into memslots.
 */
struct zvmm_layout {
	int fd; /* the memory's file; owned by the library, valid until close;
		   -1 for memory leased from zvmmd (its chunks are files
		   of their own) */
	uint64_t offset; /* of the guest mapping's first byte in the file */
	uint64_t bytes; /* the guest mapping's length */
	uint64_t page_bytes; /* ZVMM_PAGE_2M or ZVMM_PAGE_1G */
	void *addr; /* the guest mapping (zvmm_guest_memory()) */
	uint64_t reserved[8]; /* zero; room for fields to come */
};

/*
 * Fills @out. Any thread, after zvmm_guest_open().
 *
 * The rule for a second mapping of @fd (MAP_SHARED, in this process or
 * another one it is passed to): it reaches the same pages but not the
 * library, which neither sees nor serves what it touches. So it may read
 * and write only ranges the guest already has or zvmm_guest_access()
 * made ready (under prezero, everything after zvmm_guest_prepare()):
 * anywhere else it reads whatever the file held (someone else's data),
 * or allocates a page the library then counts as foreign and clears
 * before the guest sees it, losing what was written. Unmap it before
 * zvmm_guest_exit(): a mapping still there at exit means no state record
 * (another holder could write the pool). Never close @fd.
 *
 * Memslots: the guest mapping may be given to KVM as several memslots of
 * page-aligned sub-ranges (around the x86 hole below 4 GiB, say): the
 * library registers the whole mapping, so every part is served alike.
 */
ZVMM_API void zvmm_guest_layout(const struct zvmm_guest *g,
				struct zvmm_layout *out);

/*
 * Before the first vCPU runs. prezero: every page made zero. demand and
 * hybrid: the first @boot_bytes (what the VMM's loader writes) made
 * zero; pages already known zero mapped; every other first touch comes
 * to zvmm_guest_process(). After it the VMM may write its boot data
 * into the first @boot_bytes. 0, -ECANCELED, -EPERM when demand or
 * hybrid can have no userfaultfd (neither way above; the log says which
 * would help), or a negative errno. One call per guest: after a failure,
 * close the guest (a second call is -EALREADY); a pool file the open
 * created is already removed then.
 */
ZVMM_API int zvmm_guest_prepare(struct zvmm_guest *g, uint64_t boot_bytes);

/*
 * Makes the guest memory [@offset, @offset + @bytes) safe for the VMM's
 * own threads to read and write: every page the range touches (whole
 * pages: any offset and length, rounded out) that is not the guest's yet
 * is made zero and mapped, waiting for the workers; a page the guest has
 * is left as it is. @offset is into the guest mapping (as for
 * zvmm_guest_memory()), not a guest-physical address: a VMM that placed
 * the mapping around a hole translates. After it, no access to those pages, from any thread,
 * waits on the library.
 *
 * The rule for a VMM under demand and hybrid: guest memory is touched
 * from a thread other than a vCPU only after this call covered it. A
 * read of a page the guest never touched is otherwise a fault that only
 * the serving thread answers: from the serving thread itself (the one
 * that calls zvmm_guest_process()) it never returns. So:
 *  - before zvmm_guest_start(), for every range the VMM writes beyond
 *    prepare's @boot_bytes: an initrd or a device tree at the top of RAM,
 *    a snapshot's pages; repeat the call per range;
 *  - after it, in a device model, for a virtqueue's ring and buffers
 *    before reading them (a page the guest wrote is already mapped, and
 *    the call then costs a table lookup per page).
 * Under prezero nothing faults and the call only checks the range.
 *
 * After a successful zvmm_guest_prepare(), until zvmm_guest_close(); any
 * thread, including the serving one (not from a signal handler). A call
 * serialises with serving: it may hold the guest's faults for the time
 * one page takes to clear. 0, -EINVAL (out of range, or before prepare),
 * -ECANCELED after zvmm_guest_cancel(), or a worker's error.
 */
ZVMM_API int zvmm_guest_access(struct zvmm_guest *g, uint64_t offset,
			       uint64_t bytes);

/* The vCPUs run: hybrid starts scrubbing in the background. */
ZVMM_API void zvmm_guest_start(struct zvmm_guest *g);

/*
 * An fd to poll for POLLIN (epoll, io_uring, a plain poll loop): when it
 * is readable, call zvmm_guest_process(). -1 under prezero, which needs
 * no serving. Owned by the library.
 */
ZVMM_API int zvmm_guest_fd(const struct zvmm_guest *g);

/*
 * Serves what is ready and returns at once: first touches are answered
 * from zero pages or handed to the workers, pages the workers finished
 * are mapped and their vCPUs woken. 0, or a negative errno after which
 * the run must stop (a worker failed under a waiting vCPU).
 */
ZVMM_API int zvmm_guest_process(struct zvmm_guest *g);

/*
 * Instead of zvmm_guest_fd()/zvmm_guest_process(): a thread of the
 * library's own serves until zvmm_guest_exit() or zvmm_guest_close().
 * @on_error, when not NULL, is called from that thread if serving fails:
 * tell the vCPUs to stop then, and call zvmm_guest_stop() from another
 * thread; the thread goes on serving what the leaving vCPUs still fault.
 * It blocks every signal (the VMM's signals stay the VMM's). After a
 * successful prepare only: 0 (also under prezero, where there is nothing
 * to serve and no thread starts) or a negative errno (-EINVAL before
 * prepare, -EALREADY when started).
 */
ZVMM_API int zvmm_guest_serve_thread(struct zvmm_guest *g,
				     void (*on_error)(void *arg, int err),
				     void *arg);

/*
 * Stops all work within one chunk. Any thread, any time (not from a
 * signal handler); it stays cancelled until zvmm_guest_rearm().
 */
ZVMM_API void zvmm_guest_cancel(struct zvmm_guest *g);

/*
 * After a cancel ended the run: lets zvmm_guest_exit() work again. Call
 * it once no vCPU runs, before listening for the next cancel.
 */
ZVMM_API void zvmm_guest_rearm(struct zvmm_guest *g);

/*
 * The run is over (the vCPUs are told to stop): the workers stop, every
 * first touch still pending is served, and from here until
 * zvmm_guest_exit() or zvmm_guest_close() a thread of the library serves
 * every fault still coming by itself (under prezero there are none), in
 * either serving mode: the caller only joins its vCPU threads, then calls
 * exit. Once is enough; a second call changes nothing. Not from
 * @on_error (-EDEADLK), which is the serving thread. Returns the serving
 * thread's error, if any, else 0.
 */
ZVMM_API int zvmm_guest_stop(struct zvmm_guest *g);

/*
 * The guest has exited and no vCPU is left (its threads are joined): the
 * serving ends, every page the guest could have written is its data from
 * now on, and the guest mapping becomes PROT_NONE (a thread that still
 * touches it faults, rather than write into a pool about to be recorded
 * zero; zvmm_guest_access() is -EINVAL); then on_exit (release, keep, or
 * scrub and record the pool as zero). 0, -ECANCELED, or a negative
 * errno; on failure no record is written and the next open scrubs.
 */
ZVMM_API int zvmm_guest_exit(struct zvmm_guest *g);

/*
 * The memory as one file, for a VMM that runs as another process and
 * maps a path (QEMU's memory-backend-file mem-path=/proc/self/fd/N,
 * after an fd is passed to it): @fd, owned by the library and valid
 * until close (never close it), and the offset of the guest mapping's
 * first byte in it. Pass the VMM an open file description of its own
 * (open(2) /proc/self/fd/@fd), never a dup: a dup shares the library's
 * description, and a process the VMM leaves holding it could not be
 * told from the library by zvmm_guest_handed_back(). 0, or -EXDEV when the memory is several
 * files: a zvmmd lease of more than one chunk (zvmmd.conf(5), chunk).
 * Since 0.3.
 *
 * The process given the file is the guest: run it only under the
 * prezero policy (every page zero before it maps the file), only after
 * zvmm_guest_prepare(), and call zvmm_guest_handed_back() once it and
 * every process it made have exited, before zvmm_guest_exit().
 */
ZVMM_API int zvmm_guest_file(const struct zvmm_guest *g, int *fd,
			     uint64_t *offset);

/*
 * Every process zvmm_guest_file()'s file was handed to has exited: what
 * they did to the file was the guest's doing. A pool's state record is
 * then not refused for the access time their mappings moved (on_exit =
 * scrub still clears every page first). -EBUSY when a process still
 * reaches the file (a VMM that daemonized or left a child behind: it may
 * still be running a guest), -ESTALE when the file changed size: then a
 * warning says which. On that or any other failure on_exit leaves the
 * memory as it is and writes no record (the next launch scrubs it); so
 * it does for a caller's fd (ZVMM_SOURCE_FD), whose holders cannot be
 * told from the caller. A pool whose mtime or ctime moved meanwhile (a
 * chmod, a fallocate) has its pages punched out (release) whatever
 * on_exit says, and no record. -EINVAL under demand or
 * hybrid or before zvmm_guest_prepare(). Since 0.3.
 */
ZVMM_API int zvmm_guest_handed_back(struct zvmm_guest *g);

/*
 * Without a guest: makes every page zero with the workers (a warm pool
 * ready for the next launch). 0, -ECANCELED or a worker's error.
 */
ZVMM_API int zvmm_guest_prezero(struct zvmm_guest *g);

/*
 * @fn is told how long passes go: zvmm_guest_prezero(), the prezero
 * policy's pass in zvmm_guest_prepare(), on_exit's scrub. It is called
 * from the thread that made that call, about ten times a second, with
 * the bytes made zero so far of the pass's @total. NULL: not told.
 */
typedef void zvmm_progress_fn(void *arg, uint64_t done, uint64_t total);
ZVMM_API void zvmm_guest_set_progress(struct zvmm_guest *g,
				      zvmm_progress_fn *fn, void *arg);

/* What the zeroing did so far. */
struct zvmm_stats {
	char mode[16]; /* prezero, demand, hybrid */
	char backend[24]; /* the clearing backend, "none" if unused */
	char backend_from[16]; /* policy, profile, measured, none */
	unsigned int workers;
	uint64_t chunk_bytes;
	uint64_t bytes, page_bytes, pages;
	uint64_t zero_pages; /* zero now, mapped or not */
	uint64_t dirty_pages; /* someone's data now */
	double open_ms; /* zvmm_guest_open(), all of it */
	double open_memory_ms, open_record_ms, open_engine_ms; /* its parts */
	/* prezero (policy or zvmm_guest_prezero()) */
	uint64_t prezero_scrub_bytes, prezero_populate_bytes;
	double prezero_seconds, prezero_gbps;
	/* first touches served: faults read, pages they asked for, pages
	 * scrubbed for them (someone's data), pages mapped ahead of any
	 * fault (hybrid) */
	uint64_t faults, fault_pages, fault_scrubbed_pages, ahead_pages;
	uint64_t fault_bytes; /* cleared by workers for faults (scrubbed) */
	double fault_p50_us, fault_p99_us, fault_max_us; /* read to mapped */
	uint64_t busy_faults; /* those served while background work ran */
	double busy_p50_us, busy_p99_us, busy_max_us;
	/* hybrid's background */
	uint64_t background_bytes;
	double background_seconds;
	bool background_active;
	/* the pool and on_exit */
	bool pool, record_clean, record_written;
	char on_exit[16]; /* what on_exit did, "" before zvmm_guest_exit() */
	uint64_t exit_bytes;
	double exit_seconds;
	/* pages another process allocated in the pool behind zvmm's back
	 * during this launch, found and scrubbed (libzvmm(3), SECURITY) */
	uint64_t foreign_pages;
	/* holes populated for faults (the kernel zeroes them on a worker's
	 * core; not counted as scrubbed), and their bytes */
	uint64_t fault_populated_pages, fault_populate_bytes;
	/* ZVMM_MEM_SERVICE: what zvmmd leased already zero, and as holes
	 * the kernel zeroes at first touch (it had too few zero chunks) */
	uint64_t service_zero_bytes, service_empty_bytes;
	uint64_t reserved[11]; /* zero; room for fields to come */
};

/*
 * From the thread that makes the lifecycle calls, also while
 * zvmm_guest_serve_thread() serves (the two are serialised); from any
 * other thread only once zvmm_guest_stop() returned.
 */
ZVMM_API void zvmm_guest_stats(struct zvmm_guest *g, struct zvmm_stats *s);

/*
 * The same as one JSON object into @buf (NUL-terminated), with the keys,
 * nesting and types of the same statistics in `zvmm run --json`
 * (sections policy, launch, prezero, demand, background, pool;
 * the JSON Schema is docs/stats.schema.json, installed as
 * share/zvmm/stats.schema.json). The length, or -ENOSPC when @len is too
 * short.
 */
ZVMM_API int zvmm_guest_stats_json(struct zvmm_guest *g, char *buf, size_t len);

/* Stops the workers, unmaps, unlocks. Accepts NULL. */
ZVMM_API void zvmm_guest_close(struct zvmm_guest *g);

#ifdef __cplusplus
}
#endif

#endif
