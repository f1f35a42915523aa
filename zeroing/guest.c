// SPDX-License-Identifier: MIT
/*
 * One launch's guest memory from open to close (guest.h): the state
 * model of docs/DESIGN.md 3 in one place. Every page state change of a
 * launch is made here, by the engine's workers, or by the demand server,
 * all in zeroing/.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "../lib/inject.h"
#include "../lib/log.h"
#include "../lib/zvmmd_client.h"
#include "calibrate.h"
#include "demand.h"
#include "engine.h"
#include "guest.h"
#include "memory.h"
#include "record.h"
#include "verify.h"

struct zero_guest {
	struct zero_guest_layout layout;
	struct zero_policy pol;
	struct zero_mem *mem;
	struct zero_engine *engine;
	struct zero_demand demand;
	bool demand_open;
	bool quiet;
	bool started, stopped;
	bool exited; /* the guest mapping is PROT_NONE */
	bool record_clean, record_written;
	uint64_t foreign_pages; /* allocated behind zvmm's back, found */
	struct stat stamped; /* the pool, once this launch stamped it */
	enum zero_on_exit on_exit_cfg; /* the policy's, before any keep */
	const char *exit_action;
	uint64_t exit_bytes;
	double exit_seconds;
	struct zero_prezero_report pz;
	struct zero_pool_stats st0, st1; /* at start, at stop */
	double open_s[3]; /* memory, record, engine */
};

int zero_guest_preflight(const struct zero_mem_opts *o, char *err, size_t len)
{
	return zero_mem_preflight(o, err, len);
}

/* xorshift64*: cheap, and its seed is what no writer can know. */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dull;
}

/*
 * Four cache lines of every page, drawn at random for every launch
 * (getrandom(2)), read as zero: no writer can aim around them, and a
 * writer of a fraction f of each page's lines is missed with a chance
 * of (1 - f)^4 per page. It is a check, not a proof: pool.record =
 * verify reads every byte.
 */
static bool samples_zero(const struct zero_mem *m)
{
	uint64_t lines = m->page_bytes / 64, x = 0;

	if (getrandom(&x, sizeof(x), 0) != sizeof(x) || !x)
		return false; /* no randomness: trust nothing */
	/*
	 * One call maps every page of the alias, rather than one fault per
	 * page from the loop below (every page is allocated: checked).
	 */
	(void)!madvise(m->alias, m->bytes, MADV_POPULATE_READ);
	for (uint64_t i = 0; i < m->nr_pages; i++) {
		const char *p = zero_mem_alias_page(m, i);

		for (int k = 0; k < 4; k++) {
			const uint64_t *l =
				(const void *)(p + next_rand(&x) % lines * 64);

			for (int w = 0; w < 8; w++)
				if (l[w])
					return false;
		}
	}
	return true;
}

/*
 * Stamps the pool (zero_record_stamp(): no record written before
 * matches, atime before mtime so that the next mapping or read moves
 * it) and gives its times now in @st.
 */
static int stamp(struct zero_mem *m, struct stat *st, char *err, size_t len)
{
	int ret = zero_record_stamp(m);

	if (!ret && fstat(m->fd, st))
		ret = -errno;
	if (ret)
		snprintf(err, len, "cannot stamp pool %s: %s", m->path,
			 strerror(-ret));
	return ret;
}

/*
 * A pool's state record is consumed at every launch, clean or not, so no
 * record survives that a later crash could make a lie. Only a reused file
 * with a valid record, whose allocation still matches it and whose
 * samples (or, with pool.record = verify, every byte) read zero, starts
 * ZERO (docs/DESIGN.md 3, "Threat model").
 */
static int take_record(struct zero_guest *g, char *err, size_t len)
{
	struct zero_mem *m = g->mem;
	bool new_file = m->created || m->sized;
	uint64_t dirty = 0;
	struct stat st;
	char why[512];
	bool clean;
	int ret;

	if (!m->pool)
		return 0;
	ret = zero_record_take(m, &m->st_open, &clean, why, sizeof(why));
	if (ret) {
		snprintf(err, len, "cannot read the pool's state record: %s",
			 strerror(-ret));
		return ret;
	}
	/* From now on no record written before this launch matches. */
	ret = stamp(m, &st, err, len);
	if (ret)
		return ret;
	/*
	 * Again after the stamp, which hides an atime that a mapping made
	 * since the open's probe moved: such a holder is seen here.
	 */
	if (!m->caller_fd) {
		ret = zero_mem_check_alone(m, err, len);
		if (ret)
			return ret;
	}
	/*
	 * From here its atime moves only if another process maps or reads
	 * the file (the stamp left it before mtime), and its ctime and mtime
	 * only if another process changes them: zvmm's own punches and
	 * populates move none of the three (checked on 6.18).
	 */
	g->stamped = st;
	/*
	 * A caller's fd: the caller holds the file between launches and may
	 * write it through its own mapping, which no stamp or allocation
	 * count sees. No record vouches for it (none is written for it
	 * either); one left by a launch of the same file as a named pool is
	 * consumed above and not trusted.
	 */
	if (m->caller_fd || new_file)
		return 0;
	if (clean && g->pol.record == ZERO_RECORD_NEVER) {
		clean = false;
		snprintf(why, sizeof(why),
			 "pool.record = never: the state record is not used");
	}
	/*
	 * Written only when every page was allocated and zero: a file that
	 * no longer holds every page is not the one the record saw.
	 */
	if (clean && zero_mem_allocated_pages(m) != m->nr_pages) {
		clean = false;
		snprintf(
			why, sizeof(why),
			"the pool's state record does not match the file's allocation");
	}
	if (clean && g->pol.record == ZERO_RECORD_VERIFY) {
		dirty = zero_verify_pages(m, 0, NULL);
		g->record_clean = !dirty;
		if (dirty && !g->quiet)
			pr_warn("pool %s: its state record is valid, but %llu of its %llu pages are not zero: written behind zvmm's back; they are treated as dirty",
				m->path, (unsigned long long)dirty,
				(unsigned long long)m->nr_pages);
		return 0;
	}
	if (clean && !samples_zero(m)) {
		clean = false;
		snprintf(
			why, sizeof(why),
			"the pool's state record is valid but the pool holds data written since");
	}
	if (clean) {
		zero_pages_reset(m->pages, ZP_ZERO);
		g->record_clean = true;
	} else if (strcmp(why, "no state record") && !g->quiet) {
		pr_info("%s: the pool's pages are treated as dirty", why);
	}
	return 0;
}

int zero_guest_open(const struct zero_guest_cfg *cfg, struct zero_guest **out,
		    char *err, size_t len)
{
	struct zero_engine_cfg ec = { 0 };
	struct zero_guest *g;
	double t = clock_now(), t1;
	int ret;

	g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	g->pol = *cfg->pol;
	g->on_exit_cfg = g->pol.on_exit;
	g->quiet = cfg->quiet;
	ret = zero_mem_create(&cfg->mem, &g->mem, err, len);
	if (ret)
		goto fail;
	snprintf(g->mem->state_dir, sizeof(g->mem->state_dir), "%s",
		 g->pol.state_dir);
	t1 = clock_now();
	g->open_s[0] = t1 - t;
	ret = take_record(g, err, len);
	if (ret)
		goto fail;
	t = clock_now();
	g->open_s[1] = t - t1;
	ec.pol = &g->pol;
	ec.mem = g->mem;
	ec.profile_path = g->pol.profile[0] ? g->pol.profile :
					      cfg->profile_path;
	ec.topo = cfg->topo;
	ret = zero_engine_create(&ec, &g->engine, err, len);
	if (ret)
		goto fail;
	g->open_s[2] = clock_now() - t;
	g->layout = (struct zero_guest_layout){
		.fd = g->mem->fd,
		.guest = g->mem->guest,
		.bytes = g->mem->bytes,
		.page_bytes = g->mem->page_bytes,
		.nr_pages = g->mem->nr_pages,
	};
	*out = g;
	return 0;
fail:
	/* A file this open created is removed, an empty one it sized is
	 * emptied again: nothing is left behind. */
	if (g->mem)
		zero_mem_undo(g->mem);
	zero_guest_close(g);
	return ret;
}

const struct zero_guest_layout *zero_guest_layout(const struct zero_guest *g)
{
	return &g->layout;
}

void zero_guest_keep(struct zero_guest *g)
{
	g->pol.on_exit = ZERO_EXIT_KEEP;
}

int zero_guest_file(const struct zero_guest *g, int *fd, uint64_t *offset)
{
	const struct zero_mem *m = g->mem;

	*offset = 0;
	if (m->fd >= 0) {
		*fd = m->fd;
		return 0;
	}
	/* A lease of one chunk is that chunk's file from its first byte. */
	if (m->lease && m->lease->nr == 1) {
		*fd = m->lease->fd[0];
		return 0;
	}
	*fd = -1;
	return -EXDEV;
}

int zero_guest_handed_back(struct zero_guest *g, char *err, size_t len)
{
	struct zero_mem *m = g->mem;
	struct stat st;
	int ret;

	/*
	 * Only under prezero is every page the guest's (mapped) when the
	 * other process takes the file, so that zero_guest_exit() counts
	 * all of them someone's data: under demand a page the table still
	 * calls zero could hold what that process wrote.
	 */
	if (g->pol.mode != ZERO_MODE_PREZERO) {
		g->pol.on_exit = ZERO_EXIT_KEEP;
		snprintf(
			err, len,
			"memory handed to another process needs the prezero policy (zeroing.mode = prezero)");
		return -EINVAL;
	}
	/*
	 * zvmmd finds who holds its chunks itself; a private memfd has no
	 * on_exit and no record.
	 */
	if (!m->pool)
		return 0;
	/*
	 * A caller's fd: the caller holds the file too, so a process the
	 * VMM left holding it cannot be told from the caller. Nothing is
	 * changed under what may be a guest still running; every open of a
	 * caller's fd scrubs it anyway, and no record vouches for it.
	 */
	if (m->caller_fd) {
		g->pol.on_exit = ZERO_EXIT_KEEP;
		return 0;
	}
	/*
	 * Every error below leaves on_exit keep: a process still reaching
	 * the memory may be a guest still running (a VMM that daemonized),
	 * whose bytes on_exit would change. The pool is not opened again
	 * while it is held, and without a record the next launch scrubs it.
	 */
	g->pol.on_exit = ZERO_EXIT_KEEP;
	ret = zero_mem_check_alone(m, err, len);
	if (ret)
		return ret;
	if (fstat(m->fd, &st))
		return -errno;
	if (st.st_size != g->stamped.st_size) {
		snprintf(
			err, len,
			"pool %s changed size while it was handed out (%lld bytes, was %lld)",
			m->path, (long long)st.st_size,
			(long long)g->stamped.st_size);
		return -ESTALE;
	}
	g->pol.on_exit = g->on_exit_cfg;
	/*
	 * Its mapping moved the file's atime (hugetlbfs' mmap(2) does): that
	 * is forgiven, nothing else. A moved mtime or ctime (a chmod that
	 * let another user in, a fallocate) keeps the stamp, so that
	 * keep_record() writes no record, and on_exit releases the pages
	 * whatever the policy says: a page another user pinned while the
	 * file was open to it (io_uring, vmsplice) is no holder the check
	 * sees, and a scrub would leave it in the file for the next guest;
	 * a punch takes it out.
	 */
	if (st.st_mtim.tv_sec != g->stamped.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != g->stamped.st_mtim.tv_nsec ||
	    st.st_ctim.tv_sec != g->stamped.st_ctim.tv_sec ||
	    st.st_ctim.tv_nsec != g->stamped.st_ctim.tv_nsec) {
		g->pol.on_exit = ZERO_EXIT_RELEASE;
		return 0;
	}
	/*
	 * Stamped again, as at the open: atime before mtime, so that the
	 * next mapping or read by anyone moves it (a second mapping would not
	 * move an atime already past mtime, relatime), then alone again, as
	 * take_record() does: a holder the stamp's atime would hide is seen.
	 */
	ret = stamp(m, &st, err, len);
	if (ret) {
		g->pol.on_exit = ZERO_EXIT_KEEP;
		return ret;
	}
	g->stamped = st;
	ret = zero_mem_check_alone(m, err, len);
	if (ret)
		g->pol.on_exit = ZERO_EXIT_KEEP;
	return ret;
}

/*
 * prezero: maps page @i into the guest mapping from ZERO, or FRESH (the
 * kernel zeroes the page it allocates).
 */
static int map_now(struct zero_mem *m, uint64_t i)
{
	enum zero_page_state s = zero_page_get(m->pages, i);

	if (s == ZP_MAPPED)
		return 0;
	if (s != ZP_ZERO && s != ZP_FRESH)
		return -EINVAL;
	if (madvise(zero_mem_guest_page(m, i), m->page_bytes,
		    MADV_POPULATE_WRITE))
		return -errno;
	return zero_page_move(m->pages, i, s, ZP_MAPPED);
}

/*
 * prezero: every page ZERO, then populated into the guest mapping (no
 * userfaultfd is registered, so nothing faults to us).
 */
static int prezero_pages(struct zero_guest *g)
{
	struct zero_mem *m = g->mem;
	int ret = zero_engine_prezero(g->engine, &g->pz);

	for (uint64_t i = 0; !ret && i < m->nr_pages; i++)
		ret = map_now(m, i);
	return ret;
}

/*
 * demand and hybrid: the guest mapping is registered first, then the
 * pages the loader writes (boot structures, the image) are made zero and
 * every ZERO page is mapped with UFFDIO_CONTINUE; everything else is left
 * to faults and background work. Populating the guest mapping before
 * registering would not last: registration unshares hugetlb's shared
 * page tables and drops those entries (the loader then faulted with no
 * one to serve it, at 16 GiB).
 */
static int demand_pages(struct zero_guest *g, uint64_t boot_bytes, char *err,
			size_t len)
{
	struct zero_mem *m = g->mem;
	uint64_t boot = (boot_bytes + m->page_bytes - 1) / m->page_bytes;
	int ret;

	/*
	 * A pool file outlives the launch, so every page the guest takes
	 * must be known: holes fault to zvmm too (MISSING). An anonymous
	 * memfd dies with zvmm: its holes are left to the kernel's own
	 * faster path (measured: 16 GiB of fresh memory touched in 1.36-1.50
	 * s that way, 2.00-2.13 s through zvmm), which is safe because no
	 * worker ever takes a FRESH page while a guest runs and no tenant
	 * comes after.
	 */
	ret = zero_demand_open(&g->demand, m, g->engine, m->pool,
			       g->pol.mode == ZERO_MODE_HYBRID, err, len);
	if (ret)
		return ret;
	g->demand_open = true;
	for (uint64_t i = 0; !ret && i < boot && i < m->nr_pages; i++) {
		enum zero_page_state st = zero_page_get(m->pages, i);

		if (st != ZP_ZERO && st != ZP_MAPPED)
			ret = zero_engine_demand(g->engine, i);
	}
	if (!ret)
		ret = zero_demand_map_ahead(&g->demand, 0, m->nr_pages);
	if (ret < 0) {
		snprintf(err, len, "preparing guest memory failed: %s",
			 strerror(-ret));
		return ret;
	}
	return 0;
}

int zero_guest_prepare(struct zero_guest *g, uint64_t boot_bytes, char *err,
		       size_t len)
{
	int ret;

	if (g->pol.mode != ZERO_MODE_PREZERO) {
		ret = demand_pages(g, boot_bytes, err, len);
	} else {
		ret = prezero_pages(g);
		if (ret)
			snprintf(err, len, "preparing guest memory failed: %s",
				 strerror(-ret));
	}
	/*
	 * No guest will run (close is all that is left): a pool file this
	 * launch created goes, with the hugepages it holds, and an empty one
	 * it sized is emptied again, as when open fails.
	 */
	if (ret)
		zero_mem_undo(g->mem);
	return ret;
}

void zero_guest_start(struct zero_guest *g)
{
	zero_engine_stats(g->engine, &g->st0);
	g->started = true;
	if (g->pol.mode == ZERO_MODE_HYBRID)
		zero_engine_start_background(g->engine, g->pol.rate_limit);
}

void zero_guest_poll_fds(const struct zero_guest *g, int fds[2])
{
	fds[0] = g->demand_open ? g->demand.uffd : -1;
	fds[1] = g->demand_open ? g->demand.done_fd : -1;
}

int zero_guest_serve(struct zero_guest *g)
{
	int ret;

	if (!g->demand_open)
		return 0;
	/* Stopped: every fault still coming is a vCPU leaving; drain it. */
	if (g->stopped) {
		zero_guest_stop(g);
		return 0;
	}
	ret = zero_demand_read(&g->demand);
	if (!ret)
		ret = zero_demand_complete(&g->demand);
	/* Cancelled: the run is stopping, zero_guest_stop() serves the rest. */
	return ret == -ECANCELED ? 0 : ret;
}

int zero_guest_access(struct zero_guest *g, uint64_t offset, uint64_t bytes,
		      char *err, size_t len)
{
	struct zero_mem *m = g->mem;
	uint64_t first, end;
	int ret;

	if (g->exited) {
		snprintf(
			err, len,
			"the guest has exited: its memory is no one's to touch now");
		return -EINVAL;
	}
	if (offset > m->bytes || bytes > m->bytes - offset) {
		snprintf(
			err, len,
			"range [%llu, +%llu) is outside the guest's %llu bytes",
			(unsigned long long)offset, (unsigned long long)bytes,
			(unsigned long long)m->bytes);
		return -EINVAL;
	}
	/* prezero: every page was mapped zero by prepare; none faults. */
	if (!bytes || !g->demand_open)
		return 0;
	first = offset / m->page_bytes;
	end = (offset + bytes + m->page_bytes - 1) / m->page_bytes;
	/*
	 * Once stopped the workers are quiesced: the pages are made zero
	 * here, as the drain does for a vCPU still leaving.
	 */
	if (g->stopped) {
		/* A page that could not be made zero is an error, not 0. */
		ret = 0;
		for (uint64_t i = first; i < end && !ret; i++)
			ret = zero_demand_make_zero(
				&g->demand, i, zero_engine_clear_fn(g->engine));
		if (!ret)
			ret = zero_demand_map_ahead(&g->demand, first, end);
	} else {
		ret = zero_demand_access(&g->demand, first, end);
	}
	if (ret < 0 && ret != -ECANCELED)
		snprintf(err, len, "making guest memory ready failed: %s",
			 strerror(-ret));
	return ret < 0 ? ret : 0;
}

void zero_guest_set_progress(struct zero_guest *g, zero_progress_fn *fn,
			     void *arg)
{
	zero_engine_set_progress(g->engine, fn, arg);
}

void zero_guest_cancel(struct zero_guest *g)
{
	zero_engine_cancel(g->engine);
}

void zero_guest_rearm(struct zero_guest *g)
{
	zero_engine_resume(g->engine);
}

void zero_guest_stop(struct zero_guest *g)
{
	if (!g->stopped) {
		/* No worker may clear a page under the drain below. */
		zero_engine_quiesce(g->engine);
		zero_engine_stats(g->engine, &g->st1);
		g->stopped = true;
	}
	if (g->demand_open)
		zero_demand_drain(&g->demand, zero_engine_clear_fn(g->engine));
}

/*
 * Every page of a pool is ZERO after a scrub: the state record says so,
 * unless another process could have written the file during this launch
 * and the record would vouch for its bytes: one that has it open or
 * mapped now, or one that mapped or read it since the stamp (its atime
 * moved; where the mount keeps access times). Then no record is written
 * and the next launch scrubs: a warning, not an error. So too when no
 * path names the file any more: a record of it could not be pruned once
 * it is gone. Returns 0 or a negative errno for I/O trouble.
 */
static int keep_record(struct zero_guest *g)
{
	struct zero_mem *m = g->mem;
	char why[512];
	struct stat st;
	int ret;

	if (!m->pool || m->caller_fd)
		return 0; /* no record vouches for a caller's file */
	ret = zero_mem_check_alone(m, why, sizeof(why));
	if (ret == -EBUSY) {
		pr_warn("no state record is written: %s", why);
		return 0;
	}
	if (ret)
		return ret;
	if (fstat(m->fd, &st))
		return -errno;
	if (st.st_atim.tv_sec != g->stamped.st_atim.tv_sec ||
	    st.st_atim.tv_nsec != g->stamped.st_atim.tv_nsec ||
	    st.st_mtim.tv_sec != g->stamped.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != g->stamped.st_mtim.tv_nsec ||
	    st.st_ctim.tv_sec != g->stamped.st_ctim.tv_sec ||
	    st.st_ctim.tv_nsec != g->stamped.st_ctim.tv_nsec) {
		pr_warn("no state record is written: pool %s was mapped, read or changed by another process during this launch (its times moved)",
			m->path);
		return 0;
	}
	ret = zero_record_write(m, zero_mem_check_alone);
	if (ret == -EAGAIN || ret == -EBUSY) {
		pr_warn("no state record is written: pool %s %s", m->path,
			ret == -EBUSY ?
				"was opened by another process as the record was being written" :
				"changed while the record was being written");
		return 0;
	}
	if (ret == -ESTALE) {
		pr_warn("no state record is written: pool %s is no longer at a path that names it (it or its directory was removed or renamed during the launch)",
			m->path);
		return 0;
	}
	if (ret == -EPERM)
		return 0; /* the state directory is not trusted: said once */
	g->record_written = !ret;
	return ret;
}

int zero_guest_exit(struct zero_guest *g, char *err, size_t len)
{
	struct zero_prezero_report r;
	struct zero_mem *m = g->mem;
	uint64_t foreign = 0;
	int ret;

	if (!g->stopped)
		zero_guest_stop(g);
	/* Whatever on_exit does, what the guest could touch is its own. */
	ret = zero_mem_guest_exited(m, &foreign);
	if (ret) {
		snprintf(err, len, "the page state table refused: %s",
			 strerror(-ret));
		return ret;
	}
	/*
	 * No one writes the guest mapping from here: a VMM thread that
	 * outlived the guest would write into a pool on_exit may be about to
	 * record as zero (hugetlbfs moves no time stamp for a write through
	 * a mapping), and reading a hole would wait on a userfaultfd no one
	 * serves now. It faults instead; on_exit works on the alias.
	 */
	if (!g->exited && mprotect(m->guest, m->bytes, PROT_NONE)) {
		ret = -errno;
		snprintf(err, len, "cannot close the guest mapping: %s",
			 strerror(-ret));
		return ret;
	}
	g->exited = true;
	if (g->demand_open)
		foreign += g->demand.foreign_pages;
	g->foreign_pages = foreign;
	if (foreign)
		pr_warn("pool %s: %llu pages were allocated by another process behind zvmm's back during the run; they are scrubbed, not trusted",
			m->path, (unsigned long long)foreign);
	if (!m->pool)
		return 0;
	switch (g->pol.on_exit) {
	case ZERO_EXIT_KEEP:
		g->exit_action = "keep";
		return 0;
	case ZERO_EXIT_RELEASE:
		g->exit_action = "release";
		ret = -zvmm_inject("fallocate");
		if (!ret &&
		    fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      0, (off_t)m->bytes))
			ret = -errno;
		if (ret) {
			snprintf(
				err, len,
				"on_exit = release: cannot punch the pool's pages out: %s",
				strerror(-ret));
			return ret;
		}
		zero_pages_reset(m->pages, ZP_FRESH);
		return 0;
	case ZERO_EXIT_SCRUB:
		g->exit_action = "scrub";
		break;
	}
	ret = zero_engine_prezero(g->engine, &r);
	g->exit_bytes = r.scrub_bytes + r.populate_bytes;
	g->exit_seconds = r.seconds;
	if (ret) {
		snprintf(
			err, len,
			"on_exit = scrub %s: no state record is written, the next launch scrubs again",
			ret == -ECANCELED ? "interrupted" : "failed");
		return ret;
	}
	ret = keep_record(g);
	if (ret)
		snprintf(err, len,
			 "on_exit = scrub: cannot write the state record: %s",
			 strerror(-ret));
	return ret;
}

int zero_guest_prezero(struct zero_guest *g, struct zero_prezero_report *r)
{
	int ret = zero_engine_prezero(g->engine, r);

	g->pz = *r;
	/* No guest has run: a pool made wholly zero is warm for the next. */
	if (!ret)
		ret = keep_record(g);
	return ret;
}

void zero_guest_report(struct zero_guest *g, struct zero_guest_report *r)
{
	struct zero_pool_stats st1 = g->st1;
	const struct zero_demand *d = &g->demand;
	uint64_t work;

	if (!g->stopped)
		zero_engine_stats(g->engine, &st1);
	memset(r, 0, sizeof(*r));
	r->mode = zero_mode_name(g->pol.mode);
	r->open_memory_ms = g->open_s[0] * 1e3;
	r->open_record_ms = g->open_s[1] * 1e3;
	r->open_engine_ms = g->open_s[2] * 1e3;
	r->backend = zero_engine_backend_name(g->engine);
	r->backend_from = zero_engine_backend_from(g->engine);
	r->workers = zero_engine_workers(g->engine);
	r->chunk = zero_engine_chunk(g->engine);
	r->prezero = g->pz;
	if (g->started) {
		r->demand.populate_bytes = st1.demand_populate_bytes -
					   g->st0.demand_populate_bytes;
		r->demand.bytes = st1.demand_bytes - g->st0.demand_bytes -
				  r->demand.populate_bytes;
	}
	work = st1.scrub_bytes + st1.populate_bytes - g->st0.scrub_bytes -
	       g->st0.populate_bytes;
	if (g->started) {
		r->background_bytes =
			work - r->demand.bytes - r->demand.populate_bytes;
		r->background_seconds =
			g->pol.mode == ZERO_MODE_HYBRID ? st1.bg_seconds : 0;
	}
	if (d->pending) {
		r->demand.faults = d->faults;
		r->demand.pages = d->pages;
		r->demand.scrubbed_pages = d->scrubbed_pages;
		r->demand.populated_pages = d->populated_pages;
		r->demand.ahead_pages = d->ahead_pages;
		r->demand.p50_us = zero_demand_latency(&g->demand, 0.5);
		r->demand.p99_us = zero_demand_latency(&g->demand, 0.99);
		r->demand.max_us = zero_demand_latency(&g->demand, 1.0);
		r->demand.busy_faults = d->nr_busy;
		r->demand.busy_p50_us =
			zero_demand_busy_latency(&g->demand, 0.5);
		r->demand.busy_p99_us =
			zero_demand_busy_latency(&g->demand, 0.99);
		r->demand.busy_max_us =
			zero_demand_busy_latency(&g->demand, 1.0);
	}
	r->background_active = st1.bg_active;
	r->pool = g->mem->pool;
	r->record_clean = g->record_clean;
	r->record_written = g->record_written;
	r->foreign_pages = g->foreign_pages;
	if (g->mem->lease) {
		r->service_zero_bytes = g->mem->lease->zero_bytes;
		r->service_empty_bytes = g->mem->lease->empty_bytes;
	}
	r->on_exit = g->exit_action;
	r->exit_bytes = g->exit_bytes;
	r->exit_seconds = g->exit_seconds;
	r->pages = g->mem->nr_pages;
	r->zero_pages = zero_pages_count(g->mem->pages, ZP_ZERO);
	r->dirty_pages = zero_pages_count(g->mem->pages, ZP_DIRTY);
}

void zero_guest_close(struct zero_guest *g)
{
	if (!g)
		return;
	/* Workers first: a job still settling writes the demand eventfd. */
	zero_engine_destroy(g->engine);
	if (g->demand_open)
		zero_demand_close(&g->demand);
	zero_mem_destroy(g->mem);
	free(g);
}
