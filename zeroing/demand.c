// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../lib/inject.h"
#include "../lib/log.h"
#include "../lib/stats.h"
#include "calibrate.h"
#include "demand.h"
#include "uffd.h"

int zero_demand_open(struct zero_demand *f, struct zero_mem *mem,
		     struct zero_engine *engine, bool holes, bool ahead,
		     char *err, size_t len)
{
	const uint64_t need = UFFD_FEATURE_MINOR_HUGETLBFS |
			      (holes ? UFFD_FEATURE_MISSING_HUGETLBFS : 0);
	struct uffdio_api api = { .api = UFFD_API, .features = need };
	/*
	 * MINOR: a page the file holds but the guest has not mapped.
	 * MISSING: a hole. With both, no first touch of any page reaches
	 * the guest without zvmm, so the page table is the truth and a
	 * page the kernel would have allocated for the guest unseen can
	 * never be a background scrub target (docs/DESIGN.md 3).
	 */
	struct uffdio_register reg = {
		.range = { .start = (uint64_t)(uintptr_t)mem->guest,
			   .len = mem->bytes },
		.mode = UFFDIO_REGISTER_MODE_MINOR |
			(holes ? UFFDIO_REGISTER_MODE_MISSING : 0),
	};
	const char *via;
	int ret;

	memset(f, 0, sizeof(*f));
	f->uffd = f->done_fd = -1;
	f->mem = mem;
	f->engine = engine;
	f->pending = calloc(mem->nr_pages, sizeof(*f->pending));
	f->lat_us = calloc(mem->nr_pages, sizeof(*f->lat_us));
	f->busy = calloc(mem->nr_pages, sizeof(*f->busy));
	f->busy_us = calloc(mem->nr_pages, sizeof(*f->busy_us));
	if (!f->pending || !f->lat_us || !f->busy || !f->busy_us) {
		snprintf(err, len, "out of memory for fault tracking");
		ret = -ENOMEM;
		goto fail;
	}
	ret = zero_uffd_open(O_CLOEXEC | O_NONBLOCK, &via, err, len);
	if (ret < 0)
		goto fail;
	f->uffd = ret;
	pr_debug("userfaultfd from %s", via);
	if (ioctl(f->uffd, UFFDIO_API, &api) || (api.features & need) != need) {
		ret = -EOPNOTSUPP;
		snprintf(
			err, len,
			"this kernel's userfaultfd lacks missing and minor faults on hugetlbfs (UFFD_FEATURE_MINOR_HUGETLBFS, Linux 5.13+): use the prezero policy");
		goto fail;
	}
	ret = ioctl(f->uffd, UFFDIO_REGISTER, &reg) ? -errno : 0;
	if (!ret && !(reg.ioctls & (1ull << _UFFDIO_CONTINUE)))
		ret = -EOPNOTSUPP;
	if (ret) {
		snprintf(err, len,
			 "cannot register guest memory with userfaultfd: %s",
			 strerror(-ret));
		goto fail;
	}
	f->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->done_fd < 0) {
		ret = -errno;
		snprintf(err, len, "eventfd: %s", strerror(-ret));
		goto fail;
	}
	ret = zero_engine_set_notify(engine, f->done_fd, ahead);
	if (ret) {
		snprintf(err, len, "out of memory for fault tracking");
		goto fail;
	}
	return 0;
fail:
	zero_demand_close(f);
	return ret;
}

void zero_demand_close(struct zero_demand *f)
{
	if (f->uffd >= 0)
		close(f->uffd);
	if (f->done_fd >= 0)
		close(f->done_fd);
	f->uffd = f->done_fd = -1;
	free(f->pending);
	free(f->lat_us);
	free(f->busy);
	free(f->busy_us);
	f->pending = NULL;
	f->lat_us = NULL;
	f->busy = NULL;
	f->busy_us = NULL;
}

/*
 * Maps a ZERO page into the guest (or wakes the vCPUs of a page that is
 * already mapped) and records how long its first fault waited.
 */
/*
 * UFFDIO_CONTINUE over @n pages from @page, all MAPPED in the table
 * already: installs them in the guest mapping and wakes whoever faulted
 * there. A page mapped already (an earlier fault's CONTINUE) is skipped.
 */
static int continue_pages(struct zero_demand *f, uint64_t page, uint64_t n)
{
	struct zero_mem *m = f->mem;
	uint64_t at = (uint64_t)(uintptr_t)zero_mem_guest_page(m, page);
	uint64_t end = at + n * m->page_bytes;

	while (at < end) {
		uint64_t stop = end;
		struct uffdio_continue c;

		/* One ioctl maps within one VMA (-ENOENT across two): a
		 * lease's chunks are a VMA each. */
		if (m->split_bytes) {
			uint64_t off = at - (uint64_t)(uintptr_t)m->guest;
			uint64_t next =
				(off / m->split_bytes + 1) * m->split_bytes;

			if ((uint64_t)(uintptr_t)m->guest + next < stop)
				stop = (uint64_t)(uintptr_t)m->guest + next;
		}
		c = (struct uffdio_continue){
			.range = { .start = at, .len = stop - at },
		};

		if (!ioctl(f->uffd, UFFDIO_CONTINUE, &c)) {
			at = stop;
			continue;
		}
		if (errno != EAGAIN && errno != EEXIST)
			return -errno;
		/* Part may be done: go on after it, past a mapped page. */
		if (c.mapped > 0)
			at += (uint64_t)c.mapped;
		if (errno == EEXIST) {
			struct uffdio_range r = { .start = at,
						  .len = m->page_bytes };

			/* Mapped by an earlier fault: just wake its vCPUs. */
			if (ioctl(f->uffd, UFFDIO_WAKE, &r))
				return -errno;
			at += m->page_bytes;
		}
	}
	return 0;
}

/*
 * Maps a ZERO page into the guest (or wakes the vCPUs of a page that is
 * already mapped) and records how long its first fault waited.
 */
static int map_page(struct zero_demand *f, uint64_t page)
{
	struct zero_mem *m = f->mem;
	int ret;

	/* The invariant first: only a ZERO page may become MAPPED. */
	ret = zero_page_move(m->pages, page, ZP_ZERO, ZP_MAPPED);
	if (ret && zero_page_get(m->pages, page) != ZP_MAPPED)
		return ret;
	ret = -zvmm_inject("continue");
	if (!ret)
		ret = continue_pages(f, page, 1);
	if (ret)
		return ret;
	if (f->pending[page] > 0) {
		double us = (clock_now() - f->pending[page]) * 1e6;

		if (f->nr_lat < f->mem->nr_pages)
			f->lat_us[f->nr_lat++] = us;
		if (f->busy[page] && f->nr_busy < f->mem->nr_pages)
			f->busy_us[f->nr_busy++] = us;
		f->busy[page] = 0;
		f->pending[page] = 0;
		f->pages++;
	}
	return 0;
}

int zero_demand_map_ahead(struct zero_demand *f, uint64_t first, uint64_t end)
{
	struct zero_pages *pages = f->mem->pages;
	uint64_t i = first, n, mapped = 0;
	int ret;

	while (i < end) {
		/* A run of ZERO pages, each MAPPED in the table first. */
		for (n = 0; i + n < end; n++)
			if (zero_page_move(pages, i + n, ZP_ZERO, ZP_MAPPED))
				break;
		if (!n) {
			i++;
			continue;
		}
		ret = continue_pages(f, i, n);
		if (ret)
			return ret;
		i += n;
		mapped += n;
	}
	return mapped > INT_MAX ? INT_MAX : (int)mapped;
}

static int serve(struct zero_demand *f, uint64_t page, bool minor)
{
	enum zero_page_state s = zero_page_get(f->mem->pages, page);
	int ret;

	if (f->pending[page] > 0)
		return 0; /* its scrub is under way; one CONTINUE wakes all */
	/*
	 * A MINOR fault is a page the file holds. The table calls it FRESH
	 * only if it never was: another process allocated it behind zvmm's
	 * back, and what it wrote there is scrubbed, not "populated".
	 */
	if (minor && s == ZP_FRESH &&
	    !zero_page_move(f->mem->pages, page, ZP_FRESH, ZP_DIRTY)) {
		f->foreign_pages++;
		s = ZP_DIRTY;
	}
	if (s == ZP_MAPPED)
		return map_page(f, page); /* a late duplicate: EEXIST, wake */
	f->pending[page] = clock_now();
	if (s == ZP_ZERO)
		return map_page(f, page);
	ret = zero_engine_demand_async(f->engine, page);
	if (ret == 0)
		return map_page(f, page);
	if (ret == 1) {
		struct zero_pool_stats st;

		zero_engine_stats(f->engine, &st);
		f->busy[page] = st.bg_active;
		/* A hole is populated (the kernel zeroes it), not scrubbed. */
		if (s == ZP_FRESH)
			f->populated_pages++;
		else
			f->scrubbed_pages++;
		return 0;
	}
	return ret;
}

int zero_demand_read(struct zero_demand *f)
{
	struct uffd_msg msg[16];
	ssize_t n;
	int ret = 0;

	for (;;) {
		n = read(f->uffd, msg, sizeof(msg));
		if (n < 0)
			return errno == EAGAIN ? ret : -errno;
		for (size_t i = 0; i < (size_t)n / sizeof(msg[0]); i++) {
			uint64_t addr, page;
			int err;

			if (msg[i].event != UFFD_EVENT_PAGEFAULT)
				continue;
			f->faults++;
			addr = msg[i].arg.pagefault.address -
			       (uint64_t)(uintptr_t)f->mem->guest;
			page = addr / f->mem->page_bytes;
			/*
			 * Once serving has failed or was cancelled, the
			 * rest of the batch is only recorded: a message read
			 * is gone from the uffd, and zero_demand_drain() must
			 * still find its vCPU (model-life found one stranded
			 * when they were dropped).
			 */
			if (ret) {
				if (!f->pending[page])
					f->pending[page] = clock_now();
				continue;
			}
			err = serve(f, page,
				    msg[i].arg.pagefault.flags &
					    UFFD_PAGEFAULT_FLAG_MINOR);
			if (err && err != -ECANCELED)
				pr_err("serving a guest fault at 0x%llx failed: %s",
				       (unsigned long long)addr,
				       strerror(-err));
			if (err && !f->pending[page])
				f->pending[page] = clock_now();
			ret = err;
		}
		if (ret)
			return ret;
	}
}

int zero_demand_complete(struct zero_demand *f)
{
	uint64_t pages[64], cnt;
	unsigned int n;
	int ret;

	if (read(f->done_fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return -errno;
	while ((n = zero_engine_pop_done(f->engine, pages, 64)))
		for (unsigned int i = 0; i < n; i++) {
			/*
			 * Not ZERO: cancelled (the run is ending), or a
			 * worker failed, and then a vCPU waits on this page
			 * for ever: the run ends with the error.
			 */
			if (zero_page_get(f->mem->pages, pages[i]) != ZP_ZERO) {
				ret = zero_engine_error(f->engine);
				if (ret) {
					pr_err("zeroing guest page %llu for a vCPU failed: %s",
					       (unsigned long long)pages[i],
					       strerror(-ret));
					return ret;
				}
				continue;
			}
			ret = map_page(f, pages[i]);
			if (ret)
				return ret;
		}
	/*
	 * hybrid maps ahead: a page the background made ZERO goes into the
	 * guest mapping now, so the vCPU that reaches it takes no fault. A
	 * vCPU already waiting on it is woken as by a fault's own mapping.
	 */
	while ((n = zero_engine_pop_ahead(f->engine, pages, 64)))
		for (unsigned int i = 0; i < n; i++) {
			if (f->pending[pages[i]] > 0) {
				ret = map_page(f, pages[i]);
			} else {
				ret = zero_demand_map_ahead(f, pages[i],
							    pages[i] + 1);
				if (ret > 0)
					f->ahead_pages += (uint64_t)ret;
			}
			if (ret < 0)
				return ret;
		}
	return 0;
}

int zero_demand_access(struct zero_demand *f, uint64_t first, uint64_t end)
{
	struct zero_pages *pages = f->mem->pages;
	int ret;

	/*
	 * Every page that needs it is handed to the workers first, so a
	 * range of many pages is cleared in parallel, then each is waited
	 * for and mapped in turn. A page a vCPU waits on is mapped as for
	 * its fault (map_page() wakes it and keeps its latency).
	 */
	for (uint64_t i = first; i < end; i++) {
		enum zero_page_state s = zero_page_get(pages, i);

		if (s == ZP_DIRTY || s == ZP_FRESH) {
			ret = zero_engine_demand_async(f->engine, i);
			if (ret < 0)
				return ret;
		}
	}
	for (uint64_t i = first; i < end; i++) {
		if (zero_page_get(pages, i) == ZP_MAPPED)
			continue;
		ret = zero_engine_demand_wait(f->engine, i);
		if (ret)
			return ret;
		if (f->pending[i] > 0)
			ret = map_page(f, i);
		else
			ret = zero_demand_map_ahead(f, i, i + 1);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int zero_demand_make_zero(struct zero_demand *f, uint64_t page,
			  arch_clear_fn clear)
{
	struct zero_mem *m = f->mem;

	enum zero_page_state s = zero_page_get(m->pages, page);
	char *p = zero_mem_alias_page(m, page);
	int ret;

	if ((s != ZP_DIRTY && s != ZP_FRESH) ||
	    zero_page_move(m->pages, page, s, ZP_ZEROING))
		return 0;
	/* A hole: the kernel zeroes the page it allocates. */
	if (s == ZP_FRESH ? madvise(p, m->page_bytes, MADV_POPULATE_WRITE) :
			    (clear(p, m->page_bytes), 0)) {
		ret = -errno;
		(void)!zero_page_move(m->pages, page, ZP_ZEROING, ZP_DIRTY);
		return ret;
	}
	(void)!zero_page_move(m->pages, page, ZP_ZEROING, ZP_ZERO);
	return 0;
}

void zero_demand_drain(struct zero_demand *f, arch_clear_fn clear)
{
	struct uffd_msg msg[16];
	uint64_t cnt, done[64];
	ssize_t n;

	if (f->uffd < 0)
		return;
	/*
	 * What the workers finished before they were quiesced is announced
	 * no more: the pending pages below are mapped whatever their state,
	 * and the eventfd must not stay readable under a poller.
	 */
	while (read(f->done_fd, &cnt, sizeof(cnt)) > 0 ||
	       zero_engine_pop_done(f->engine, done, 64) ||
	       zero_engine_pop_ahead(f->engine, done, 64))
		;
	while ((n = read(f->uffd, msg, sizeof(msg))) > 0)
		for (size_t i = 0; i < (size_t)n / sizeof(msg[0]); i++) {
			uint64_t page;

			if (msg[i].event != UFFD_EVENT_PAGEFAULT)
				continue;
			page = (msg[i].arg.pagefault.address -
				(uint64_t)(uintptr_t)f->mem->guest) /
			       f->mem->page_bytes;
			if (!f->pending[page])
				f->pending[page] = clock_now();
		}
	/* A page that cannot be made zero now stays pending: it is tried
	 * again at the next call, never dropped with its vCPU waiting. */
	for (uint64_t p = 0; p < f->mem->nr_pages; p++) {
		if (!f->pending[p])
			continue;
		(void)!zero_demand_make_zero(f, p, clear);
		(void)!map_page(f, p);
	}
}

static double percentile(double *v, size_t n, double q)
{
	stats_sort(v, n);
	return stats_percentile_sorted(v, n, q);
}

double zero_demand_latency(struct zero_demand *f, double q)
{
	return percentile(f->lat_us, f->nr_lat, q);
}

double zero_demand_busy_latency(struct zero_demand *f, double q)
{
	return percentile(f->busy_us, f->nr_busy, q);
}
