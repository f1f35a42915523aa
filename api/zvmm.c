// SPDX-License-Identifier: MIT
/*
 * libzvmm's public API (include/zvmm/zvmm.h) over the lifecycle of
 * zeroing/guest.h. This file is the whole of what the shared library
 * exports; everything else is hidden by -fvisibility=hidden and the
 * version script (api/libzvmm.map).
 */
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <json-c/json.h>

#include "../include/zvmm/zvmm.h"
#include "stats.h"
#include "../lib/file.h"
#include "../lib/log.h"
#include "../lib/thread.h"
#include "../zeroing/backend.h"
#include "../zeroing/calibrate.h"
#include "../zeroing/guest.h"
#include "../zeroing/hugetlb.h"
#include "../zeroing/policy.h"

/*
 * zvmm_mem_check, zvmm_backends and zvmm_guest_open take structs that
 * grew reserved space in 0.2, and struct zvmm_mem took a source kind and
 * service_path from it in 0.3. Their definitions here are named by the
 * release whose struct they read (*_0_3 for zvmm_mem's two, *_0_2 for
 * zvmm_backends) and exported as the default version, name@@ZVMM_0.3 or
 * @@ZVMM_0.2, which is also what a static link or the zvmm binary
 * resolves the plain name to; older ones stay under their own nodes
 * ("Older ABIs", at the end). No definition has the plain name: the
 * version script would give it ZVMM_0.
 */
#ifdef ZVMM_NO_SYMVER
/*
 * libzvmm.a's copy: no versions, whose nodes a shared object linking the
 * archive would not have (every linker refuses it), just the names.
 */
#define zvmm_mem_check_0_3 zvmm_mem_check
#define zvmm_backends_0_2 zvmm_backends
#define zvmm_guest_open_0_3 zvmm_guest_open
#define ZVMM_VERSIONED(sym) ZVMM_API
#else
#define ZVMM_VERSIONED(sym) ZVMM_API __attribute__((symver(sym)))
#endif

int zvmm_mem_check_0_3(const struct zvmm_mem *mem);
unsigned int zvmm_backends_0_2(struct zvmm_backend_info *out, unsigned int max);
int zvmm_guest_open_0_3(const struct zvmm_mem *mem,
			const struct zvmm_policy *pol, struct zvmm_guest **out);

struct zvmm_policy {
	struct zero_policy pol;
};

struct zvmm_reservation {
	struct zero_hugetlb_resv resv;
};

struct zvmm_guest {
	struct zero_guest *g;
	/* serving (either thread) against zvmm_guest_stats() */
	pthread_mutex_t serve_lock;
	int epoll_fd; /* the guest's poll fds, -1: none (prezero) */
	bool prepare_called, prepared; /* prepare is one call */
	/* zvmm_guest_serve_thread() */
	pthread_t thread;
	bool thread_on;
	int wake_fd; /* ends the thread */
	int thread_err;
	void (*on_error)(void *arg, int err);
	void *on_error_arg;
	double open_ms;
	/* zvmm_guest_set_log() */
	zvmm_guest_log_fn *log;
	void *log_arg;
	enum log_level log_max;
};

const char *zvmm_version(void)
{
	return ZVMM_VERSION;
}

int zvmm_check_version(unsigned int major, unsigned int minor)
{
	if (major == ZVMM_VERSION_MAJOR && minor <= ZVMM_VERSION_MINOR)
		return 0;
	pr_err("libzvmm %s runs, and the program needs the API of %u.%u: install libzvmm %u.%u or later (same major version)",
	       ZVMM_VERSION, major, minor, major, minor);
	return -ENOTSUP;
}

void zvmm_mem_init(struct zvmm_mem *m, uint64_t bytes, uint64_t page_bytes)
{
	memset(m, 0, sizeof(*m));
	m->bytes = bytes;
	m->page_bytes = page_bytes;
	m->fd = -1;
}

/* ---------------------------------------------------------------- log */

static zvmm_log_fn *user_log;
static void *user_log_arg;
static enum log_level user_max = LOG_ERR;

/*
 * The guest whose call (or serving thread) this thread is in: its own
 * log takes the messages then (zvmm_guest_set_log()).
 */
static __thread struct zvmm_guest *log_guest;

static const enum zvmm_log_level to_api_level[] = {
	[LOG_ERR] = ZVMM_LOG_ERROR,
	[LOG_WARN] = ZVMM_LOG_WARNING,
	[LOG_INFO] = ZVMM_LOG_INFO,
	[LOG_DEBUG] = ZVMM_LOG_DEBUG,
};

static const enum log_level from_api_level[] = {
	[ZVMM_LOG_ERROR] = LOG_ERR,
	[ZVMM_LOG_WARNING] = LOG_WARN,
	[ZVMM_LOG_INFO] = LOG_INFO,
	[ZVMM_LOG_DEBUG] = LOG_DEBUG,
};

static void to_user(void *arg, enum log_level level, const char *msg)
{
	struct zvmm_guest *g = log_guest;

	(void)arg;
	if (g && g->log) {
		if (level <= g->log_max)
			g->log(g->log_arg, g, to_api_level[level], msg);
		return;
	}
	if (user_log && level <= user_max)
		user_log(user_log_arg, to_api_level[level], msg);
}

/* One sink for both logs; the levels are each log's own. */
static void install_sink(void)
{
	log_level = LOG_DEBUG;
	log_set_sink(to_user, NULL);
}

void zvmm_set_log(zvmm_log_fn *fn, void *arg, enum zvmm_log_level max)
{
	user_log = fn;
	user_log_arg = arg;
	user_max = max <= ZVMM_LOG_DEBUG ? from_api_level[max] : LOG_DEBUG;
	install_sink();
}

void zvmm_guest_set_log(struct zvmm_guest *g, zvmm_guest_log_fn *fn, void *arg,
			enum zvmm_log_level max)
{
	g->log = fn;
	g->log_arg = arg;
	g->log_max = max <= ZVMM_LOG_DEBUG ? from_api_level[max] : LOG_DEBUG;
	install_sink();
}

/* Messages of this call are @g's: the previous guest, to put back. */
static struct zvmm_guest *enter(struct zvmm_guest *g)
{
	struct zvmm_guest *prev = log_guest;

	log_guest = g;
	return prev;
}

static void leave(struct zvmm_guest *prev)
{
	log_guest = prev;
}

static int fail(int ret, const char *err)
{
	if (ret && ret != -ECANCELED && err[0])
		pr_err("%s", err);
	return ret;
}

/* ------------------------------------------------------------- policy */

int zvmm_policy_new(struct zvmm_policy **out)
{
	struct zvmm_policy *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	zero_policy_defaults(&p->pol);
	*out = p;
	return 0;
}

int zvmm_policy_load(struct zvmm_policy *p, const char *path)
{
	struct zero_policy tmp = p->pol;
	char err[512] = "";
	int ret;

	if (!path)
		return -EINVAL;
	ret = zero_policy_load(&tmp, path, err, sizeof(err));
	if (!ret)
		p->pol = tmp;
	return fail(ret, err);
}

int zvmm_policy_set(struct zvmm_policy *p, const char *key, const char *value)
{
	struct zero_policy tmp = p->pol;
	char err[512] = "", *assign;
	int ret;

	if (!key || !value)
		return -EINVAL;
	if (asprintf(&assign, "%s=%s", key, value) < 0)
		return -ENOMEM;
	ret = zero_policy_set(&tmp, assign, err, sizeof(err));
	free(assign);
	if (!ret)
		p->pol = tmp;
	return fail(ret, err);
}

/*
 * Text a print function writes, copied into the caller's @buf: its
 * length, -ENOSPC when @len is too short, -ENOMEM.
 */
static int format_into(void (*print)(const void *obj, FILE *f), const void *obj,
		       char *buf, size_t len)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	int ret;

	if (!f)
		return -ENOMEM;
	print(obj, f);
	if (fclose(f)) {
		free(text);
		return -ENOMEM;
	}
	ret = n < len ? (int)n : -ENOSPC;
	if (ret >= 0)
		memcpy(buf, text, n + 1);
	free(text);
	return ret;
}

static void print_policy(const void *obj, FILE *f)
{
	zero_policy_print(obj, f);
}

int zvmm_policy_format(const struct zvmm_policy *p, char *buf, size_t len)
{
	return format_into(print_policy, &p->pol, buf, len);
}

void zvmm_policy_free(struct zvmm_policy *p)
{
	free(p);
}

/* ------------------------------------------------------------- memory */

/*
 * 0.2's struct and 0.3's are one layout (LP64): source and reserved32
 * took 0.2's reserved[0], service_path its reserved[1].
 */
_Static_assert(sizeof(struct zvmm_mem) == 80, "struct zvmm_mem is 80 bytes");
_Static_assert(offsetof(struct zvmm_mem, source) == 32,
	       "source takes 0.2's reserved[0]");
_Static_assert(offsetof(struct zvmm_mem, service_path) == 40,
	       "service_path takes 0.2's reserved[1]");
_Static_assert(offsetof(struct zvmm_mem, reserved) == 48,
	       "reserved[] stays where 0.2's reserved[2] was");

static const char *const source_names[] = { "auto", "private", "pool", "fd",
					    "service" };

/* The kind the one field set names (ZVMM_SOURCE_AUTO); 0 when two are. */
static uint32_t source_of(const struct zvmm_mem *mem)
{
	unsigned int set =
		!!mem->pool_path + (mem->fd >= 0) +
		(mem->service_path || (mem->flags & ZVMM_MEM_SERVICE));

	if (set > 1)
		return 0;
	if (mem->service_path || (mem->flags & ZVMM_MEM_SERVICE))
		return ZVMM_SOURCE_SERVICE;
	if (mem->fd >= 0)
		return ZVMM_SOURCE_FD;
	return mem->pool_path ? ZVMM_SOURCE_POOL : ZVMM_SOURCE_PRIVATE;
}

/*
 * 0.3's struct: one source kind, each field meaning one thing (pool_path
 * a pool file, fd the caller's file, service_path zvmmd's socket), the
 * kind given or (ZVMM_SOURCE_AUTO) the one field set.
 */
static int mem_opts(const struct zvmm_mem *in, struct zero_mem_opts *o)
{
	const struct zvmm_mem *mem = in;
	struct zvmm_mem legacy;
	uint64_t unknown = 0;
	uint32_t kind;

	if (!mem)
		return -EINVAL;
	/*
	 * 0.2's way, kept for programs written for it (the contract is only
	 * extended): ZVMM_MEM_SERVICE with pool_path naming the socket.
	 */
	if ((mem->flags & ZVMM_MEM_SERVICE) && mem->pool_path &&
	    !mem->service_path &&
	    (!mem->source || mem->source == ZVMM_SOURCE_SERVICE)) {
		legacy = *mem;
		legacy.service_path = legacy.pool_path;
		legacy.pool_path = NULL;
		mem = &legacy;
	}
	for (size_t i = 0; i < sizeof(mem->reserved) / sizeof(mem->reserved[0]);
	     i++)
		unknown |= mem->reserved[i];
	if ((mem->flags & ~ZVMM_MEM_SERVICE) || unknown || mem->reserved32 ||
	    mem->source > ZVMM_SOURCE_SERVICE) {
		pr_err("struct zvmm_mem has flags 0x%x, source %u or reserved words this libzvmm (%s) does not know: start it with zvmm_mem_init(), or run the newer libzvmm the program was built for",
		       mem->flags, mem->source, ZVMM_VERSION);
		return -EINVAL;
	}
	kind = source_of(mem);
	if (!kind) {
		pr_err("guest memory is one of a pool file (mem.pool_path), a caller's fd (mem.fd) or a zvmmd lease (mem.service_path, ZVMM_MEM_SERVICE): more than one is set");
		return -EINVAL;
	}
	/* A kind given must be the one its fields say. */
	if (mem->source && mem->source != kind &&
	    !(mem->source == ZVMM_SOURCE_SERVICE &&
	      kind == ZVMM_SOURCE_PRIVATE)) {
		pr_err("mem.source = %s, but the fields set say %s: set only %s",
		       source_names[mem->source], source_names[kind],
		       mem->source == ZVMM_SOURCE_POOL ?
			       "mem.pool_path" :
		       mem->source == ZVMM_SOURCE_FD ?
			       "mem.fd" :
		       mem->source == ZVMM_SOURCE_SERVICE ?
			       "mem.service_path (or none: the default socket), mem.fd -1" :
			       "mem.bytes and mem.page_bytes, mem.fd -1");
		return -EINVAL;
	}
	if (mem->source == ZVMM_SOURCE_SERVICE)
		kind = ZVMM_SOURCE_SERVICE;
	*o = (struct zero_mem_opts){ .bytes = mem->bytes,
				     .page_bytes = mem->page_bytes };
	switch (kind) {
	case ZVMM_SOURCE_SERVICE:
		o->service = true;
		o->service_path = mem->service_path;
		break;
	case ZVMM_SOURCE_FD:
		o->has_fd = true;
		o->fd = mem->fd;
		break;
	case ZVMM_SOURCE_POOL:
		o->pool_path = mem->pool_path;
		break;
	}
	return 0;
}

/* The default version; 0.1's and 0.2's are at the end. */
ZVMM_VERSIONED("zvmm_mem_check@@ZVMM_0.3")
int zvmm_mem_check_0_3(const struct zvmm_mem *mem)
{
	struct zero_mem_opts o;
	char err[512] = "";
	int ret = mem_opts(mem, &o);

	if (ret)
		return ret;
	return fail(zero_guest_preflight(&o, err, sizeof(err)), err);
}

int zvmm_hugepages_reserve(uint64_t page_bytes, uint64_t nr,
			   struct zvmm_reservation **out)
{
	struct zvmm_reservation *r = calloc(1, sizeof(*r));
	int ret;

	if (nr > LONG_MAX) {
		free(r);
		pr_err("%llu hugepages is more than any machine has",
		       (unsigned long long)nr);
		return -EINVAL;
	}
	if (!r)
		return -ENOMEM;
	r->resv = (struct zero_hugetlb_resv)ZERO_HUGETLB_RESV_INIT;
	ret = zero_hugetlb_reserve(page_bytes, (long)nr, &r->resv);
	if (ret) {
		free(r);
		return ret;
	}
	*out = r;
	return 0;
}

void zvmm_hugepages_release(struct zvmm_reservation *r)
{
	if (!r)
		return;
	zero_hugetlb_release(&r->resv);
	free(r);
}

/* ----------------------------------------------------------- backends */

/* Backend @i of the registry into @out. */
static void fill_backend(unsigned int i, struct zvmm_backend_info *out)
{
	const struct zero_backend *b;
	unsigned int j;

	for_each_backend(j, b) {
		if (j != i)
			continue;
		memset(out, 0, sizeof(*out));
		snprintf(out->name, sizeof(out->name), "%s", b->name);
		zero_features_format(b->needs, out->needs, sizeof(out->needs));
		snprintf(out->what, sizeof(out->what), "%s", b->what);
		out->runs_here = zero_backend_runs_here(b);
	}
}

ZVMM_VERSIONED("zvmm_backends@@ZVMM_0.2")
unsigned int zvmm_backends_0_2(struct zvmm_backend_info *out, unsigned int max)
{
	unsigned int n = zero_backend_count();

	for (unsigned int i = 0; i < n && i < max; i++)
		fill_backend(i, &out[i]);
	return n;
}

const char *zvmm_arch(void)
{
	return arch_name;
}

void zvmm_cpu_features(char *buf, size_t len)
{
	zero_features_format(zero_cpu_features(), buf, len);
}

struct zvmm_calibration {
	struct zero_profile p;
};

int zvmm_calibrate(struct zvmm_calibration **out)
{
	struct zvmm_calibration *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	/*
	 * The region follows the last-level cache: the cache is filled
	 * with dirty lines, then every window timed is memory nothing wrote
	 * since, as guest memory is (zero_measure_bytes(), DESIGN.md 6).
	 */
	ret = zero_calibrate(zero_calibrate_chunks, zero_calibrate_nr_chunks, 0,
			     5, &c->p);
	if (ret) {
		pr_err("calibration needs %llu MiB of memory: %s",
		       (unsigned long long)(zero_measure_bytes(zero_llc_bytes(),
							       5) >>
					    20),
		       strerror(-ret));
		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

unsigned int zvmm_calibration_chunks(const struct zvmm_calibration *c)
{
	return c->p.nr;
}

uint64_t zvmm_calibration_chunk(const struct zvmm_calibration *c,
				unsigned int i)
{
	return i < c->p.nr ? c->p.e[i].chunk : 0;
}

double zvmm_calibration_gbps(const struct zvmm_calibration *c, unsigned int i,
			     const char *name)
{
	int k = name ? zero_backend_index(name) : -1;

	return i < c->p.nr && k >= 0 && k < ZERO_PROFILE_MAX_BACKENDS ?
		       c->p.e[i].gbps[k] :
		       0;
}

const char *zvmm_calibration_best(const struct zvmm_calibration *c,
				  unsigned int i)
{
	if (i >= c->p.nr || c->p.e[i].best < 0)
		return NULL;
	return zero_backend_at((unsigned int)c->p.e[i].best)->name;
}

int zvmm_calibration_write(const struct zvmm_calibration *c, const char *path,
			   char *written, size_t written_len)
{
	char def[PATH_MAX];
	int ret;

	if (!path) {
		if (zero_profile_default_path(def, sizeof(def))) {
			pr_err("no $XDG_CACHE_HOME or $HOME to keep the profile in: give a path");
			return -ENOENT;
		}
		path = def;
	}
	ret = file_mkdir_parents(path, 0755);
	if (ret) {
		pr_err("cannot create the directory for %s: %s", path,
		       strerror(-ret));
		return ret;
	}
	ret = zero_profile_write(&c->p, path);
	if ((ret == -EACCES || ret == -EPERM) && geteuid())
		/* Per operation: only writing a system profile needs root. */
		pr_err("cannot write %s: %s: its directory is not this user's (/var/cache/zvmm is root's): run as root to write it, or keep a profile of this user's own ($XDG_CACHE_HOME/zvmm or ~/.cache/zvmm)",
		       path, strerror(-ret));
	else if (ret)
		pr_err("cannot write %s: %s", path, strerror(-ret));
	else if (written)
		snprintf(written, written_len, "%s", path);
	return ret;
}

static void print_profile(const void *obj, FILE *f)
{
	zero_profile_print(obj, f);
}

int zvmm_calibration_format(const struct zvmm_calibration *c, char *buf,
			    size_t len)
{
	return format_into(print_profile, &c->p, buf, len);
}

void zvmm_calibration_free(struct zvmm_calibration *c)
{
	free(c);
}

/* -------------------------------------------------------------- guest */

ZVMM_VERSIONED("zvmm_guest_open@@ZVMM_0.3")
int zvmm_guest_open_0_3(const struct zvmm_mem *mem,
			const struct zvmm_policy *pol, struct zvmm_guest **out)
{
	struct zero_guest_cfg cfg = { .pol = pol ? &pol->pol : NULL,
				      .quiet = true };
	struct zero_policy defaults;
	struct zvmm_guest *v;
	char err[512] = "";
	double t0 = clock_now();
	int ret;

	ret = mem_opts(mem, &cfg.mem);
	if (ret)
		return ret;
	if (!pol) {
		zero_policy_defaults(&defaults);
		cfg.pol = &defaults;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->epoll_fd = -1;
	v->wake_fd = -1;
	pthread_mutex_init(&v->serve_lock, NULL);
	ret = zero_guest_preflight(&cfg.mem, err, sizeof(err));
	if (!ret)
		ret = zero_guest_open(&cfg, &v->g, err, sizeof(err));
	if (ret) {
		pthread_mutex_destroy(&v->serve_lock);
		free(v);
		return fail(ret, err);
	}
	v->open_ms = (clock_now() - t0) * 1e3;
	*out = v;
	return 0;
}

void zvmm_guest_memory(const struct zvmm_guest *v, void **addr, uint64_t *bytes)
{
	const struct zero_guest_layout *l = zero_guest_layout(v->g);

	*addr = l->guest;
	*bytes = l->bytes;
}

void zvmm_guest_layout(const struct zvmm_guest *v, struct zvmm_layout *out)
{
	const struct zero_guest_layout *l = zero_guest_layout(v->g);

	memset(out, 0, sizeof(*out));
	out->fd = l->fd;
	out->offset = 0;
	out->bytes = l->bytes;
	out->page_bytes = l->page_bytes;
	out->addr = l->guest;
}

static int make_epoll(struct zvmm_guest *v)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fds[2];

	zero_guest_poll_fds(v->g, fds);
	if (fds[0] < 0 && fds[1] < 0)
		return 0;
	v->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (v->epoll_fd < 0)
		return -errno;
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0 &&
		    epoll_ctl(v->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev)) {
			int ret = -errno;

			close(v->epoll_fd);
			v->epoll_fd = -1;
			return ret;
		}
	return 0;
}

static int guest_prepare(struct zvmm_guest *v, uint64_t boot_bytes)
{
	char err[512] = "";
	int ret;

	/* One call: a failed one leaves the guest to be closed. */
	if (v->prepare_called)
		return -EALREADY;
	v->prepare_called = true;
	ret = zero_guest_prepare(v->g, boot_bytes, err, sizeof(err));
	if (!ret) {
		ret = make_epoll(v);
		if (ret)
			snprintf(err, sizeof(err), "epoll: %s", strerror(-ret));
	}
	v->prepared = !ret;
	return fail(ret, err);
}

int zvmm_guest_prepare(struct zvmm_guest *v, uint64_t boot_bytes)
{
	struct zvmm_guest *prev = enter(v);
	int ret = guest_prepare(v, boot_bytes);

	leave(prev);
	return ret;
}

static int guest_access(struct zvmm_guest *v, uint64_t offset, uint64_t bytes)
{
	char err[512] = "";
	int ret;

	if (!v->prepared)
		return fail(
			-EINVAL,
			"zvmm_guest_access() before a successful zvmm_guest_prepare()");
	/* The serving calls' lock: a fault of the same page is served by
	 * one or the other, whole. */
	pthread_mutex_lock(&v->serve_lock);
	ret = zero_guest_access(v->g, offset, bytes, err, sizeof(err));
	pthread_mutex_unlock(&v->serve_lock);
	return fail(ret, err);
}

int zvmm_guest_access(struct zvmm_guest *v, uint64_t offset, uint64_t bytes)
{
	struct zvmm_guest *prev = enter(v);
	int ret = guest_access(v, offset, bytes);

	leave(prev);
	return ret;
}

static void guest_start(struct zvmm_guest *v)
{
	zero_guest_start(v->g);
}

void zvmm_guest_start(struct zvmm_guest *v)
{
	struct zvmm_guest *prev = enter(v);

	guest_start(v);
	leave(prev);
}

int zvmm_guest_fd(const struct zvmm_guest *v)
{
	return v->epoll_fd;
}

static int guest_process(struct zvmm_guest *v)
{
	struct epoll_event ev[2];
	int ret;

	/* Drain the readiness so a level-triggered poller sleeps again;
	 * zero_guest_serve() reads every source itself. */
	if (v->epoll_fd >= 0)
		(void)!epoll_wait(v->epoll_fd, ev, 2, 0);
	pthread_mutex_lock(&v->serve_lock);
	ret = zero_guest_serve(v->g);
	pthread_mutex_unlock(&v->serve_lock);
	return ret;
}

int zvmm_guest_process(struct zvmm_guest *v)
{
	struct zvmm_guest *prev = enter(v);
	int ret = guest_process(v);

	leave(prev);
	return ret;
}

/*
 * The library's serving thread: faults and finished pages until the run
 * stops, then the drain of every fault still arriving (a vCPU leaving
 * KVM_RUN), until zvmm_guest_exit() or zvmm_guest_close() ends it. After
 * a failure it drains too: the vCPUs are told through @on_error, and none
 * is left caught while they leave.
 */
static void *serve_thread(void *arg)
{
	struct zvmm_guest *v = arg;
	struct pollfd p[2] = { { .fd = v->epoll_fd, .events = POLLIN },
			       { .fd = v->wake_fd, .events = POLLIN } };
	bool failed = false;

	log_guest = v; /* what this thread says is the guest's */
	thread_name("zvmm-serve");

	for (;;) {
		int ret = poll(p, 2, -1);

		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			ret = -errno;
		} else {
			if (p[1].revents)
				return NULL;
			if (failed) {
				pthread_mutex_lock(&v->serve_lock);
				zero_guest_stop(v->g);
				pthread_mutex_unlock(&v->serve_lock);
				continue;
			}
			ret = zvmm_guest_process(v);
		}
		if (ret) {
			v->thread_err = ret;
			pr_err("serving guest memory failed: %s",
			       strerror(-ret));
			zero_guest_cancel(v->g);
			if (v->on_error)
				v->on_error(v->on_error_arg, ret);
			failed = true;
			/* A poll error will not clear: stop polling the fd
			 * (it would spin); zvmm_guest_stop() still drains. */
			if (p[0].revents & (POLLERR | POLLNVAL))
				p[0].fd = -1;
		}
	}
}

static int start_thread(struct zvmm_guest *v)
{
	sigset_t all, old;
	int ret;

	v->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (v->wake_fd < 0)
		return -errno;
	v->thread_err = 0;
	/* The thread takes no signal of the VMM's: they stay its own. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&v->thread, NULL, serve_thread, v);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		close(v->wake_fd);
		v->wake_fd = -1;
		return ret;
	}
	v->thread_on = true;
	return 0;
}

/* Ends the serving thread (not from itself). */
static void end_thread(struct zvmm_guest *v)
{
	uint64_t one = 1;

	if (!v->thread_on)
		return;
	if (write(v->wake_fd, &one, sizeof(one)) != sizeof(one))
		zero_guest_cancel(v->g);
	pthread_join(v->thread, NULL);
	close(v->wake_fd);
	v->wake_fd = -1;
	v->thread_on = false;
}

int zvmm_guest_serve_thread(struct zvmm_guest *v,
			    void (*on_error)(void *arg, int err), void *arg)
{
	if (!v->prepared)
		return -EINVAL;
	if (v->epoll_fd < 0)
		return 0; /* prezero: nothing to serve */
	if (v->thread_on)
		return -EALREADY;
	v->on_error = on_error;
	v->on_error_arg = arg;
	return start_thread(v);
}

void zvmm_guest_cancel(struct zvmm_guest *v)
{
	zero_guest_cancel(v->g);
}

void zvmm_guest_rearm(struct zvmm_guest *v)
{
	zero_guest_rearm(v->g);
}

static int guest_stop(struct zvmm_guest *v)
{
	int ret;

	/* From the serve thread (its on_error): it drains by itself. */
	if (v->thread_on && pthread_equal(pthread_self(), v->thread))
		return -EDEADLK;
	pthread_mutex_lock(&v->serve_lock);
	zero_guest_stop(v->g);
	pthread_mutex_unlock(&v->serve_lock);
	/*
	 * From here until exit or close a thread of the library serves the
	 * faults of vCPUs still leaving, also for a caller that polled: it
	 * only joins its vCPU threads.
	 */
	if (!v->thread_on && v->prepared && v->epoll_fd >= 0) {
		ret = start_thread(v);
		if (ret)
			return ret; /* the caller's polling still drains */
	}
	return v->thread_err;
}

int zvmm_guest_stop(struct zvmm_guest *v)
{
	struct zvmm_guest *prev = enter(v);
	int ret = guest_stop(v);

	leave(prev);
	return ret;
}

static int guest_exit(struct zvmm_guest *v)
{
	char err[512] = "";

	/* No vCPU is left: nothing more to drain. */
	end_thread(v);
	return fail(zero_guest_exit(v->g, err, sizeof(err)), err);
}

int zvmm_guest_exit(struct zvmm_guest *v)
{
	struct zvmm_guest *prev = enter(v);
	int ret = guest_exit(v);

	leave(prev);
	return ret;
}

int zvmm_guest_file(const struct zvmm_guest *v, int *fd, uint64_t *offset)
{
	return zero_guest_file(v->g, fd, offset);
}

static int guest_handed_back(struct zvmm_guest *v)
{
	char err[512] = "";
	int ret;

	if (!v->prepared) {
		zero_guest_keep(v->g);
		return fail(
			-EINVAL,
			"zvmm_guest_handed_back() before a successful zvmm_guest_prepare(): on_exit keeps the memory as it is");
	}
	ret = zero_guest_handed_back(v->g, err, sizeof(err));
	if (ret == -EBUSY || ret == -ESTALE) {
		pr_warn("%s; on_exit leaves the memory as it is and no state record is written",
			err);
		return ret;
	}
	return fail(ret, err);
}

int zvmm_guest_handed_back(struct zvmm_guest *v)
{
	struct zvmm_guest *prev = enter(v);
	int ret = guest_handed_back(v);

	leave(prev);
	return ret;
}

static int guest_prezero(struct zvmm_guest *v)
{
	struct zero_prezero_report r;

	return zero_guest_prezero(v->g, &r);
}

int zvmm_guest_prezero(struct zvmm_guest *v)
{
	struct zvmm_guest *prev = enter(v);
	int ret = guest_prezero(v);

	leave(prev);
	return ret;
}

void zvmm_guest_set_progress(struct zvmm_guest *v, zvmm_progress_fn *fn,
			     void *arg)
{
	/* The same signature as zeroing's own. */
	zero_guest_set_progress(v->g, fn, arg);
}

static void copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

void zvmm_guest_stats(struct zvmm_guest *v, struct zvmm_stats *s)
{
	const struct zero_guest_layout *l = zero_guest_layout(v->g);
	struct zero_guest_report r;

	pthread_mutex_lock(&v->serve_lock);
	zero_guest_report(v->g, &r);
	pthread_mutex_unlock(&v->serve_lock);
	memset(s, 0, sizeof(*s));
	copy(s->mode, sizeof(s->mode), r.mode);
	copy(s->backend, sizeof(s->backend), r.backend);
	copy(s->backend_from, sizeof(s->backend_from), r.backend_from);
	s->workers = r.workers;
	s->chunk_bytes = r.chunk;
	s->bytes = l->bytes;
	s->page_bytes = l->page_bytes;
	s->pages = r.pages;
	s->zero_pages = r.zero_pages;
	s->dirty_pages = r.dirty_pages;
	s->open_ms = v->open_ms;
	s->open_memory_ms = r.open_memory_ms;
	s->open_record_ms = r.open_record_ms;
	s->open_engine_ms = r.open_engine_ms;
	s->prezero_scrub_bytes = r.prezero.scrub_bytes;
	s->prezero_populate_bytes = r.prezero.populate_bytes;
	s->prezero_seconds = r.prezero.seconds;
	s->prezero_gbps = r.prezero.gbps;
	s->faults = r.demand.faults;
	s->fault_pages = r.demand.pages;
	s->fault_scrubbed_pages = r.demand.scrubbed_pages;
	s->fault_populated_pages = r.demand.populated_pages;
	s->fault_populate_bytes = r.demand.populate_bytes;
	s->ahead_pages = r.demand.ahead_pages;
	s->fault_bytes = r.demand.bytes;
	s->fault_p50_us = r.demand.p50_us;
	s->fault_p99_us = r.demand.p99_us;
	s->fault_max_us = r.demand.max_us;
	s->busy_faults = r.demand.busy_faults;
	s->busy_p50_us = r.demand.busy_p50_us;
	s->busy_p99_us = r.demand.busy_p99_us;
	s->busy_max_us = r.demand.busy_max_us;
	s->background_bytes = r.background_bytes;
	s->background_seconds = r.background_seconds;
	s->background_active = r.background_active;
	s->pool = r.pool;
	s->record_clean = r.record_clean;
	s->record_written = r.record_written;
	copy(s->on_exit, sizeof(s->on_exit), r.on_exit);
	s->exit_bytes = r.exit_bytes;
	s->exit_seconds = r.exit_seconds;
	s->foreign_pages = r.foreign_pages;
	s->service_zero_bytes = r.service_zero_bytes;
	s->service_empty_bytes = r.service_empty_bytes;
}

int zvmm_guest_stats_json(struct zvmm_guest *v, char *buf, size_t len)
{
	struct zvmm_stats s;
	json_object *o;
	const char *text;
	size_t n;
	int ret;

	zvmm_guest_stats(v, &s);
	/* The rows of api/stats.h: the same keys as zvmm run --json's. */
	o = json_object_new_object();
	if (!o || api_stats_json(&s, o)) {
		json_object_put(o);
		return -ENOMEM;
	}
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	n = text ? strlen(text) : 0;
	ret = !text ? -ENOMEM : n < len ? (int)n : -ENOSPC;
	if (ret >= 0)
		memcpy(buf, text, n + 1);
	json_object_put(o);
	return ret;
}

static void guest_close(struct zvmm_guest *v)
{
	if (!v)
		return;
	end_thread(v);
	if (v->epoll_fd >= 0)
		close(v->epoll_fd);
	zero_guest_close(v->g);
	pthread_mutex_destroy(&v->serve_lock);
	free(v);
}

void zvmm_guest_close(struct zvmm_guest *v)
{
	struct zvmm_guest *prev = enter(v);

	guest_close(v);
	leave(prev);
}

#ifndef ZVMM_NO_SYMVER
/* -------------------------------------------------------- Older ABIs */

/*
 * Programs built against 0.2 pass struct zvmm_mem as 0.2 read it:
 * ZVMM_MEM_SERVICE said the memory is leased from zvmmd, and pool_path
 * then named zvmmd's socket; what 0.3 calls source, reserved32 and
 * service_path were reserved words, zero. Their calls bind to these
 * (ZVMM_0.2), which read it so and pass it on as 0.3's.
 */
int zvmm_mem_check_0_2(const struct zvmm_mem *mem);
int zvmm_guest_open_0_2(const struct zvmm_mem *mem,
			const struct zvmm_policy *pol, struct zvmm_guest **out);

static int mem_from_0_2(const struct zvmm_mem *old, struct zvmm_mem *m)
{
	if (!old)
		return -EINVAL;
	*m = *old;
	/* Words 0.2 reserved: what a 0.2 program set there it did not know. */
	if (m->source || m->reserved32 || m->service_path) {
		pr_err("struct zvmm_mem has reserved words set that this call (ZVMM_0.2) does not know: start it with zvmm_mem_init()");
		return -EINVAL;
	}
	if (m->flags & ZVMM_MEM_SERVICE) {
		m->source = ZVMM_SOURCE_SERVICE;
		m->service_path = m->pool_path;
		m->pool_path = NULL;
		m->flags &= ~ZVMM_MEM_SERVICE;
	}
	return 0;
}

ZVMM_VERSIONED("zvmm_mem_check@ZVMM_0.2")
int zvmm_mem_check_0_2(const struct zvmm_mem *mem)
{
	struct zvmm_mem m;
	int ret = mem_from_0_2(mem, &m);

	return ret ? ret : zvmm_mem_check_0_3(&m);
}

ZVMM_VERSIONED("zvmm_guest_open@ZVMM_0.2")
int zvmm_guest_open_0_2(const struct zvmm_mem *mem,
			const struct zvmm_policy *pol, struct zvmm_guest **out)
{
	struct zvmm_mem m;
	int ret = mem_from_0_2(mem, &m);

	return ret ? ret : zvmm_guest_open_0_3(&m, pol, out);
}

/*
 * Programs built against 0.1 pass the structs as they were then, without
 * flags or reserved space: their calls bind to these (symbol version
 * ZVMM_0), which copy them into today's structs. abi/libzvmm-0.1.0.abi
 * and -0.2.0.abi are the ABIs these keep; `make abi-check` compares.
 */
struct zvmm_mem_0_1 {
	uint64_t bytes;
	uint64_t page_bytes;
	const char *pool_path;
	int fd;
};

struct zvmm_backend_info_0_1 {
	char name[24];
	char needs[64];
	char what[96];
	bool runs_here;
};

int zvmm_mem_check_0_1(const struct zvmm_mem_0_1 *mem);
int zvmm_guest_open_0_1(const struct zvmm_mem_0_1 *mem,
			const struct zvmm_policy *pol, struct zvmm_guest **out);
unsigned int zvmm_backends_0_1(struct zvmm_backend_info_0_1 *out,
			       unsigned int max);

static void mem_from_0_1(const struct zvmm_mem_0_1 *old, struct zvmm_mem *m)
{
	zvmm_mem_init(m, old->bytes, old->page_bytes);
	m->pool_path = old->pool_path;
	m->fd = old->fd;
}

ZVMM_VERSIONED("zvmm_mem_check@ZVMM_0")
int zvmm_mem_check_0_1(const struct zvmm_mem_0_1 *mem)
{
	struct zvmm_mem m;

	if (!mem)
		return -EINVAL;
	mem_from_0_1(mem, &m);
	return zvmm_mem_check_0_3(&m);
}

ZVMM_VERSIONED("zvmm_guest_open@ZVMM_0")
int zvmm_guest_open_0_1(const struct zvmm_mem_0_1 *mem,
			const struct zvmm_policy *pol, struct zvmm_guest **out)
{
	struct zvmm_mem m;

	if (!mem)
		return -EINVAL;
	mem_from_0_1(mem, &m);
	return zvmm_guest_open_0_3(&m, pol, out);
}

ZVMM_VERSIONED("zvmm_backends@ZVMM_0")
unsigned int zvmm_backends_0_1(struct zvmm_backend_info_0_1 *out,
			       unsigned int max)
{
	struct zvmm_backend_info info;
	unsigned int n = zero_backend_count();

	for (unsigned int i = 0; i < n && i < max; i++) {
		fill_backend(i, &info);
		memcpy(out[i].name, info.name, sizeof(out[i].name));
		memcpy(out[i].needs, info.needs, sizeof(out[i].needs));
		memcpy(out[i].what, info.what, sizeof(out[i].what));
		out[i].runs_here = info.runs_here;
	}
	return n;
}
#endif /* ZVMM_NO_SYMVER */
