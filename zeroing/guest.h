/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_GUEST_H
#define ZVMM_ZEROING_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "request.h"
#include "topo.h"

/*
 * The lifecycle of one launch's guest memory (docs/DESIGN.md 3): the
 * only way vmm/ and bench/ reach the page state table. zeroing/ owns
 * every transition; a caller asks and is told.
 *
 *   zero_guest_open()     lock the pool, map, classify every page,
 *                         consume the state record, start the workers
 *   zero_guest_prepare()  the policy's work before the first vCPU runs
 *   zero_guest_start()    the vCPUs run: hybrid's background starts
 *   zero_guest_serve()    a fault or a finished page (the event loop)
 *   zero_guest_stop()     the run is over: no vCPU is left waiting
 *   zero_guest_exit()     the guest has exited: on_exit
 *   zero_guest_close()    unmap, unlock
 *
 * One thread calls these in this order; zero_guest_cancel() may be
 * called from any thread at any time.
 */

struct zero_guest;

struct zero_guest_cfg {
	struct zero_mem_opts mem;
	const struct zero_policy *pol;
	const char *profile_path; /* for backend=auto; NULL: the default */
	bool quiet; /* no notes (pr_info) about the pool */
	const struct zero_topo *topo; /* NULL: this machine's */
};

/* What a VMM maps into the guest: the guest mapping of the memory. */
struct zero_guest_layout {
	int fd; /* the memory's file: the guest mapping is it from offset 0 */
	char *guest;
	uint64_t bytes;
	uint64_t page_bytes;
	uint64_t nr_pages;
};

struct zero_guest_report {
	const char *mode, *backend;
	const char *backend_from; /* policy, profile, measured or none */
	/* zero_guest_open(): open, lock, map and classify; the record; the
	 * backend choice and the workers */
	double open_memory_ms, open_record_ms, open_engine_ms;
	unsigned int workers;
	uint64_t chunk;
	struct zero_prezero_report prezero; /* before the first vCPU */
	struct {
		uint64_t faults, pages, scrubbed_pages, bytes;
		uint64_t populated_pages, populate_bytes;
		uint64_t ahead_pages; /* hybrid: mapped as background ended */
		double p50_us, p99_us, max_us;
		uint64_t busy_faults;
		double busy_p50_us, busy_p99_us, busy_max_us;
	} demand;
	uint64_t background_bytes;
	double background_seconds;
	bool background_active;
	bool pool, record_clean, record_written;
	/* pages another process allocated behind zvmm's back, found during
	 * the run (a MINOR fault on a FRESH page) or at exit */
	uint64_t foreign_pages;
	uint64_t service_zero_bytes, service_empty_bytes;
	const char *on_exit; /* what on_exit did: NULL when not applied */
	uint64_t exit_bytes;
	double exit_seconds;
	uint64_t pages, zero_pages, dirty_pages; /* the table now */
};

/*
 * Pre-flight: checks that @o can be met before anything is allocated
 * (zero_mem_preflight(): sizes, the mount, free hugepages, a pool held by
 * another launch). Returns 0 or a negative errno with @err set.
 */
int zero_guest_preflight(const struct zero_mem_opts *o, char *err,
			 size_t err_len) __attribute__((warn_unused_result));

/*
 * Opens the memory (a pool file is locked for the life of the handle:
 * -EBUSY when another launch holds it), classifies every page from what
 * the file holds and the state record, and starts the workers. Returns
 * 0, or a negative errno with @err saying what to do; nothing is left
 * behind on failure.
 */
int zero_guest_open(const struct zero_guest_cfg *cfg, struct zero_guest **out,
		    char *err, size_t err_len)
	__attribute__((warn_unused_result));

const struct zero_guest_layout *zero_guest_layout(const struct zero_guest *g);

/*
 * The memory as one file another process can map: @fd (owned here) from
 * @offset. -EXDEV when it is several files (a zvmmd lease of several
 * chunks).
 */
int zero_guest_file(const struct zero_guest *g, int *fd, uint64_t *offset)
	__attribute__((warn_unused_result));

/*
 * Every process the file was handed to (a VMM run on it) has exited:
 * what they did to it is the guest's, and the times their mappings moved
 * do not refuse the state record. Prezero only (-EINVAL). -EBUSY, @err
 * naming the process, when one still reaches the file: on_exit is then
 * keep (no byte of a guest that may still run is changed, no record).
 * -ESTALE when the file changed size (also keep). A moved mtime or
 * ctime makes on_exit release (no record). Before zero_guest_exit().
 */
int zero_guest_handed_back(struct zero_guest *g, char *err, size_t len)
	__attribute__((warn_unused_result));

/* on_exit is keep from now on, whatever the policy says. */
void zero_guest_keep(struct zero_guest *g);

/*
 * Before the first vCPU runs. prezero: every page made zero and mapped.
 * demand and hybrid: the first @boot_bytes (what the loader writes) made
 * zero and mapped, pages a valid record proved zero mapped, and the
 * guest mapping registered with userfaultfd so that every other first
 * touch comes to zvmm. Returns 0, -ECANCELED, or a negative errno with
 * @err set.
 */
int zero_guest_prepare(struct zero_guest *g, uint64_t boot_bytes, char *err,
		       size_t err_len) __attribute__((warn_unused_result));

/* The vCPUs run: hybrid starts its background scrub. */
void zero_guest_start(struct zero_guest *g);

/*
 * The fds an event loop polls for POLLIN, each to be followed by
 * zero_guest_serve(): @fds[0] guest faults, @fds[1] pages the workers
 * finished. -1 where the policy has none (prezero).
 */
void zero_guest_poll_fds(const struct zero_guest *g, int fds[2]);

/*
 * Serves what is ready: faults are answered or handed to the workers,
 * finished pages are mapped and their vCPUs woken. Returns 0, or a
 * negative errno after which the run must stop (a worker failed while a
 * vCPU waits on its page: zero_guest_error() says so).
 */
int zero_guest_serve(struct zero_guest *g) __attribute__((warn_unused_result));

/*
 * @fn is told how prezero passes go (the prezero policy's in prepare,
 * zero_guest_prezero(), on_exit's scrub), from the thread that called
 * them, about ten times a second. zeroing/ draws nothing itself.
 */
/*
 * The pages of [@offset, @offset + @bytes) that are not the guest's yet
 * made zero and mapped, so that the VMM's own threads may touch them
 * (zvmm_guest_access()). After prepare; serialised with zero_guest_serve()
 * by the caller.
 */
int zero_guest_access(struct zero_guest *g, uint64_t offset, uint64_t bytes,
		      char *err, size_t err_len)
	__attribute__((warn_unused_result));

void zero_guest_set_progress(struct zero_guest *g, zero_progress_fn *fn,
			     void *arg);

/*
 * Stops all work within one chunk; any thread, any time. It stays
 * cancelled (work started later stops at once) until zero_guest_rearm().
 */
void zero_guest_cancel(struct zero_guest *g);

/*
 * After the run has stopped: lets zero_guest_exit() work again, so a
 * signal that ended the run does not also cancel on_exit. Call it before
 * listening for the next signal, which then cancels on_exit.
 */
void zero_guest_rearm(struct zero_guest *g);

/*
 * The run is over: the workers stop, and every fault still pending or
 * queued is served here (the page made zero, then mapped), so no vCPU
 * stays caught in userfaultfd. Call until the vCPU threads are gone.
 */
void zero_guest_stop(struct zero_guest *g);

/*
 * The guest has exited (no vCPU left): every page it could have touched
 * is DIRTY from now on, then on_exit: release, keep, or scrub and write
 * the state record. Returns 0, -ECANCELED, or a negative errno with @err
 * set; on failure no record is written.
 */
int zero_guest_exit(struct zero_guest *g, char *err, size_t err_len)
	__attribute__((warn_unused_result));

/*
 * The verb `zvmm prezero`: every page zero, none mapped into a guest.
 * Returns 0, -ECANCELED, or a worker's error.
 */
int zero_guest_prezero(struct zero_guest *g, struct zero_prezero_report *r)
	__attribute__((warn_unused_result));

void zero_guest_report(struct zero_guest *g, struct zero_guest_report *r);

/* Unmaps, stops the workers, unlocks. Accepts NULL. */
void zero_guest_close(struct zero_guest *g);

#endif
