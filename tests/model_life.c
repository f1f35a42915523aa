// SPDX-License-Identifier: MIT
/*
 * The zeroing promise as a model-based test at the engine level: random
 * sequences of launches on one pool file, through the lifecycle API
 * (zeroing/guest.h) alone, each with a random policy, on_exit, boot pages,
 * guest that writes or only reads, and an ending: a clean exit, a guest
 * crash mid-run, a signal (cancel) mid-run, an injected worker error, or
 * zvmm itself dying (no on_exit at all), each launch reading records from
 * one of two state directories, with a random [pool] record (trust,
 * verify, never). The guests are threads touching
 * the guest mapping as vCPUs would, so every first touch goes through
 * the real userfaultfd paths (MISSING and MINOR) and the demand server.
 *
 * And an outside writer, another process that can write the pool (the
 * euid's or root's, inside the trust boundary), as one more random
 * event: between launches it maps the pool and writes (every line of
 * every page but the four zvmm once sampled; or a few words, then
 * atime and mtime set back; or a few words before a launch that
 * verifies or never trusts the record); during a run it punches out a
 * page the guest touched and fills a page the guests leave alone.
 *
 * The model: a launch's guest owns exactly the words it wrote in that
 * launch. So every page's first read in a launch must be all zero (an
 * earlier tenant's words, or anyone's, would show), and every word a
 * guest wrote must read back unchanged at the end of a run that was not
 * cut short (a page the outside writer punched out excepted: its
 * words are gone by the writer's hand). The writer's bytes are no one's:
 * a first read that finds them fails like another tenant's. Built with
 * each sanitizer (make SANITIZE=...), it is also the lifecycle's ASan
 * and TSan test.
 *
 * Usage: model-life [SEEDS [LAUNCHES]]. Needs root and 16 free 2 MiB
 * hugepages it reserves itself; otherwise it says why and skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/falloc.h>

#include "../lib/inject.h"
#include "../lib/size.h"
#include "../lib/log.h"
#include "../lib/safefile.h"
#include "../zeroing/guest.h"
#include "../zeroing/hugetlb.h"

#define PAGES 16
#define MARKS 32 /* words a writing guest puts in each page */
#define VCPUS 2

enum ending {
	END_CLEAN,
	END_GUEST_CRASH,
	END_SIGNAL,
	END_WORKER_ERROR,
	END_ZVMM_DIES,
	END_NR
};

static const char *const ending_names[] = { "clean", "guest-crash", "signal",
					    "worker-error", "zvmm-dies" };
static const char *const modes[] = { "prezero", "demand", "hybrid" };
static const char *const exits[] = { "scrub", "keep", "release" };
static const char *const records[] = { "trust", "verify", "never" };

/* What an outside writer does between two launches. */
enum between {
	BETWEEN_NONE,
	BETWEEN_DENSE, /* every line of every page but the old samples */
	BETWEEN_TIMES, /* a few words, then atime and mtime set back */
	BETWEEN_SPARSE, /* a few words: the launch verifies or never trusts */
	BETWEEN_NR
};

static const char *const between_names[] = { "", "dense", "times set back",
					     "sparse" };

struct vcpu {
	pthread_t thread;
	const struct zero_guest_layout *mem;
	unsigned int id, seed;
	bool writes;
	unsigned int max_pages; /* pages before a crash; PAGES: no crash */
	int *stop; /* the run was stopped: leave at the next page */
	int skip; /* a page no vCPU touches in this launch, or -1 */
	/* vCPU 0: after this many pages the outside writer runs (0: never) */
	unsigned int writer_at;
	const char *pool;
	int punched; /* the page it punched out, or -1 */
	int writer_failed; /* the writer's wait status when not 0 */
	uint64_t off[PAGES][MARKS], val[PAGES][MARKS];
	bool written[PAGES];
	unsigned int touched; /* pages read so far (atomic) */
	uint64_t foreign; /* non-zero words at a first read */
	uint64_t lost; /* own words changed by the end */
	bool finished; /* ran to its end and checked */
	int done; /* the thread returned (atomic) */
};

struct server {
	struct zero_guest *g;
	int quit; /* atomic */
	int error;
};

static uint64_t next(unsigned int *s)
{
	return (uint64_t)rand_r(s) << 31 ^ (uint64_t)rand_r(s);
}

/* The four lines of a page zvmm sampled before it drew them at random. */
static bool old_sample(uint64_t page_bytes, uint64_t off)
{
	for (uint64_t k = 0; k < 4; k++) {
		uint64_t s = (page_bytes - 64) / 3 * k & ~63ull;

		if (off >= s && off < s + 64)
			return true;
	}
	return false;
}

/*
 * In a child: the outside writer. Punches out page @punch (-1: none),
 * fills page @fill (-1: none) but for the old samples, and writes the
 * pool as @how says. Returns an exit status.
 */
static int outside_writer(const char *path, int punch, int fill,
			  enum between how, unsigned int seed)
{
	struct timespec ts[2];
	struct stat st;
	uint8_t *p;
	int fd;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : 1; /* no pool yet */
	if (fstat(fd, &st))
		return 2;
	if (st.st_size != (off_t)(PAGES * SZ_2M))
		return 0; /* no pool yet: nothing to write */
	if (punch >= 0 &&
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)punch * (off_t)SZ_2M, (off_t)SZ_2M))
		return 3;
	p = mmap(NULL, PAGES * SZ_2M, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	if (p == MAP_FAILED)
		return 4;
	for (uint64_t off = 0; fill >= 0 && off < SZ_2M; off += 64)
		if (!old_sample(SZ_2M, off))
			memset(p + (uint64_t)fill * SZ_2M + off, 0xa5, 64);
	for (unsigned int pg = 0; how == BETWEEN_DENSE && pg < PAGES; pg++)
		for (uint64_t off = 0; off < SZ_2M; off += 64)
			if (!old_sample(SZ_2M, off))
				memset(p + pg * SZ_2M + off, 0x3c, 64);
	if (how == BETWEEN_TIMES || how == BETWEEN_SPARSE) {
		unsigned int pg = (unsigned int)rand_r(&seed) % PAGES;

		for (unsigned int k = 0; k < 4; k++) {
			uint64_t off = (next(&seed) % (SZ_2M / 8)) * 8;

			*(volatile uint64_t *)(p + pg * SZ_2M + off) =
				0xbad0000000000000ull | k;
		}
	}
	munmap(p, PAGES * SZ_2M);
	if (how == BETWEEN_TIMES) {
		ts[0] = st.st_atim;
		ts[1] = st.st_mtim;
		if (futimens(fd, ts))
			return 5;
	}
	close(fd);
	return 0;
}

/* Runs the outside writer in another process; its wait status. */
static int outside_write(const char *path, int punch, int fill,
			 enum between how, unsigned int seed)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (!pid)
		_exit(outside_writer(path, punch, fill, how, seed));
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

static void *vcpu_main(void *arg)
{
	struct vcpu *v = arg;
	unsigned int order[PAGES], n = 0;

	/* Its share: pages of its parity, in a random order. */
	for (unsigned int p = v->id; p < PAGES; p += VCPUS)
		if ((int)p != v->skip)
			order[n++] = p;
	for (unsigned int i = n; i > 1; i--) {
		unsigned int j = (unsigned int)rand_r(&v->seed) % i, t;

		t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
	for (unsigned int i = 0; i < n; i++) {
		unsigned int p = order[i];
		const volatile uint64_t *w;

		if (__atomic_load_n(v->stop, __ATOMIC_ACQUIRE) ||
		    i >= v->max_pages)
			goto out;
		/*
		 * The writer during the run, from this vCPU so that it is
		 * done with the page punched and never comes back to it:
		 * that page and the skipped one are written behind zvmm.
		 */
		if (v->writer_at && i == v->writer_at) {
			unsigned int gone = order[i - 1];

			v->punched = (int)gone;
			v->writer_failed = outside_write(
				v->pool, (int)gone, v->skip, BETWEEN_NONE, 0);
		}
		/* The first touch: a fault the engine serves. */
		w = (const volatile uint64_t *)(v->mem->guest +
						p * v->mem->page_bytes);
		for (uint64_t k = 0; k < v->mem->page_bytes / 8; k++)
			v->foreign += w[k] != 0;
		__atomic_add_fetch(&v->touched, 1, __ATOMIC_RELEASE);
		if (!v->writes)
			continue;
		for (unsigned int k = 0; k < MARKS; k++) {
			uint64_t part = v->mem->page_bytes / 8 / MARKS;

			v->off[p][k] = k * part + next(&v->seed) % part;
			v->val[p][k] = next(&v->seed) | 1;
			((volatile uint64_t *)w)[v->off[p][k]] = v->val[p][k];
		}
		v->written[p] = true;
		sched_yield(); /* let background work overtake */
	}
	/* After the walk: every word it wrote is still its own. */
	for (unsigned int p = 0; p < PAGES; p++) {
		const volatile uint64_t *w =
			(const volatile uint64_t *)(v->mem->guest +
						    p * v->mem->page_bytes);

		for (unsigned int k = 0;
		     v->written[p] && (int)p != v->punched && k < MARKS; k++)
			v->lost += w[v->off[p][k]] != v->val[p][k];
	}
	v->finished = true;
out:
	__atomic_store_n(&v->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The event loop's part: poll the fds, serve what is ready. */
static void *server_main(void *arg)
{
	struct server *s = arg;
	struct pollfd pfd[2];
	int fds[2];

	zero_guest_poll_fds(s->g, fds);
	for (int i = 0; i < 2; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	while (!__atomic_load_n(&s->quit, __ATOMIC_ACQUIRE)) {
		int ret;

		if (fds[0] < 0)
			break; /* prezero: nothing ever faults */
		if (poll(pfd, 2, 5) <= 0)
			continue;
		ret = zero_guest_serve(s->g);
		if (ret) {
			__atomic_store_n(&s->error, ret, __ATOMIC_RELEASE);
			break;
		}
	}
	return NULL;
}

struct world {
	char mnt[64], pool[96], state[64], state2[80];
	unsigned int seed, id;
	unsigned long launches, failures, skipped_prepare;
	unsigned long endings[END_NR];
	unsigned long writers_between, writers_during;
};

static bool all_done(struct vcpu *v)
{
	for (int i = 0; i < VCPUS; i++)
		if (!__atomic_load_n(&v[i].done, __ATOMIC_ACQUIRE))
			return false;
	return true;
}

static unsigned int touched(struct vcpu *v)
{
	unsigned int n = 0;

	for (int i = 0; i < VCPUS; i++)
		n += __atomic_load_n(&v[i].touched, __ATOMIC_ACQUIRE);
	return n;
}

static int fail(struct world *w, const char *what, const char *detail)
{
	fprintf(stderr, "model-life: seed %u launch %lu: %s: %s\n", w->id,
		w->launches, what, detail);
	w->failures++;
	return -1;
}

static int launch(struct world *w)
{
	unsigned int mode = (unsigned int)rand_r(&w->seed) % 3;
	unsigned int ex = (unsigned int)rand_r(&w->seed) % 3;
	enum ending end =
		(enum ending)((unsigned int)rand_r(&w->seed) % END_NR);
	bool writes = rand_r(&w->seed) % 4 != 0;
	uint64_t boot = rand_r(&w->seed) % 2 ? SZ_2M : 0;
	unsigned int event = (unsigned int)rand_r(&w->seed) % 8;
	unsigned int rec = (unsigned int)rand_r(&w->seed) % 4;
	enum between between = event < BETWEEN_NR ? (enum between)event :
						    BETWEEN_NONE;
	bool during = event >= 6;
	int skip = during ? (int)((unsigned int)rand_r(&w->seed) % PAGES) : -1;
	struct zero_guest_cfg cfg = { .mem = { .bytes = PAGES * SZ_2M,
					       .page_bytes = SZ_2M,
					       .pool_path = w->pool },
				      .quiet = true };
	struct server srv = { 0 };
	struct vcpu *v;
	struct zero_policy pol;
	struct zero_guest *g;
	char err[512], set[64], what[160];
	int stop = 0, ret;
	pthread_t server;

	/*
	 * The writer during a run writes a page no vCPU touches: under
	 * prezero it is mapped (the guest's from prepare on); under demand
	 * and hybrid it may be a hole zvmm has not seen allocated, which
	 * on_exit = scrub must scrub, not merely populate.
	 */
	if (during && mode == 0)
		mode = 1 + (unsigned int)rand_r(&w->seed) % 2;
	if (during && rand_r(&w->seed) % 2)
		ex = 0;
	/* trust half the time; a sparse writer is found by reading all. */
	rec = rec < 2 ? 0 : rec - 1;
	if (between == BETWEEN_SPARSE && rec == 0)
		rec = 1 + (unsigned int)rand_r(&w->seed) % 2;
	snprintf(what, sizeof(what),
		 "%s on_exit=%s record=%s %s%s, ending %s%s%s%s", modes[mode],
		 exits[ex], records[rec], writes ? "writing" : "reading",
		 boot ? " boot page" : "", ending_names[end],
		 between ? ", a writer before: " : "", between_names[between],
		 during ? ", a writer during" : "");
	zero_policy_defaults(&pol);
	snprintf(set, sizeof(set), "zeroing.mode=%s", modes[mode]);
	ret = zero_policy_set(&pol, set, err, sizeof(err));
	snprintf(set, sizeof(set), "pool.on_exit=%s", exits[ex]);
	ret = ret ?: zero_policy_set(&pol, set, err, sizeof(err));
	snprintf(set, sizeof(set), "pool.record=%s", records[rec]);
	ret = ret ?: zero_policy_set(&pol, set, err, sizeof(err));
	ret = ret   ?:
		      zero_policy_set(&pol, "zeroing.backend=memset", err,
				      sizeof(err));
	ret = ret   ?:
		      zero_policy_set(&pol, "zeroing.workers=2", err,
				      sizeof(err));
	ret = ret   ?:
		      zero_policy_set(&pol, "zeroing.chunk=256K", err,
				      sizeof(err));
	if (ret)
		return fail(w, "policy", err);
	cfg.pol = &pol;
	w->launches++;
	w->endings[end]++;
	/*
	 * Two state directories, as two users or two environments would
	 * have: a record one launch left must not vouch for the pool after
	 * a launch that looked in the other.
	 */
	setenv("ZVMM_STATE_DIR", rand_r(&w->seed) % 2 ? w->state : w->state2,
	       1);
	/* A worker's populate fails (the hugetlb pool running dry). */
	zvmm_inject_arm(end == END_WORKER_ERROR ? "populate" : NULL,
			1 + (unsigned long)rand_r(&w->seed) % 4);
	if (between) {
		w->writers_between++;
		ret = outside_write(w->pool, -1, -1, between,
				    (unsigned int)rand_r(&w->seed));
		if (ret) {
			snprintf(err, sizeof(err), "%s: wait status %d", what,
				 ret);
			return fail(w, "the writer before the launch", err);
		}
	}
	ret = zero_guest_open(&cfg, &g, err, sizeof(err));
	if (ret)
		return fail(w, "open", err);
	ret = zero_guest_prepare(g, boot, err, sizeof(err));
	if (ret) {
		/* Only the injected error may stop a launch here. */
		zero_guest_close(g);
		zvmm_inject_arm(NULL, 0);
		if (end == END_WORKER_ERROR) {
			w->skipped_prepare++;
			return 0;
		}
		return fail(w, "prepare", err);
	}
	v = calloc(VCPUS, sizeof(*v));
	if (!v)
		return fail(w, "calloc", "out of memory");
	srv.g = g;
	zero_guest_start(g);
	pthread_create(&server, NULL, server_main, &srv);
	for (int i = 0; i < VCPUS; i++) {
		v[i] = (struct vcpu){ .mem = zero_guest_layout(g),
				      .id = (unsigned int)i,
				      .seed = (unsigned int)rand_r(&w->seed),
				      .writes = writes,
				      .max_pages = PAGES,
				      .stop = &stop,
				      .skip = skip,
				      .pool = w->pool,
				      .punched = -1 };
		if (end == END_GUEST_CRASH && i == 0)
			v[i].max_pages = (unsigned int)rand_r(&w->seed) %
					 (PAGES / VCPUS);
		if (during && i == 0) {
			w->writers_during++;
			v[i].writer_at = 1 + (unsigned int)rand_r(&w->seed) %
						     (PAGES / VCPUS - 2);
		}
		pthread_create(&v[i].thread, NULL, vcpu_main, &v[i]);
	}
	/*
	 * A signal: once the guests are a third of the way, the run is
	 * cancelled (zvmm's signalfd path).
	 */
	if (end == END_SIGNAL) {
		while (touched(v) < PAGES / 3 && !all_done(v) &&
		       !__atomic_load_n(&srv.error, __ATOMIC_ACQUIRE))
			sched_yield();
		zero_guest_cancel(g);
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	}
	/* The run ends when the guests are done or serving failed. */
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && !all_done(v) &&
	       !__atomic_load_n(&srv.error, __ATOMIC_ACQUIRE))
		poll(NULL, 0, 1);
	__atomic_store_n(&srv.quit, 1, __ATOMIC_RELEASE);
	pthread_join(server, NULL);
	/*
	 * As vmm_vm_wait(): no vCPU may stay caught in a fault, so
	 * zero_guest_stop() serves what is pending until every guest thread
	 * has returned.
	 */
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	while (!all_done(v)) {
		zero_guest_stop(g);
		poll(NULL, 0, 1);
	}
	for (int i = 0; i < VCPUS; i++)
		pthread_join(v[i].thread, NULL);
	zero_guest_stop(g);
	if (end != END_ZVMM_DIES) {
		zero_guest_rearm(g); /* as zvmm run does before on_exit */
		ret = zero_guest_exit(g, err, sizeof(err));
		if (ret && end != END_WORKER_ERROR && end != END_SIGNAL)
			fail(w, "exit", err);
	}
	/* As a crash would: no on_exit, the lock dropped with the file. */
	zero_guest_close(g);
	zvmm_inject_arm(NULL, 0);
	for (int i = 0; i < VCPUS; i++) {
		char d[400];

		if (v[i].foreign) {
			snprintf(
				d, sizeof(d),
				"%s: vCPU %d read %llu non-zero words on first touch",
				what, i, (unsigned long long)v[i].foreign);
			fail(w, "another's data", d);
		}
		if (v[i].lost) {
			snprintf(d, sizeof(d), "%s: vCPU %d lost %llu words",
				 what, i, (unsigned long long)v[i].lost);
			fail(w, "guest's data destroyed", d);
		}
		if (end == END_CLEAN && !v[i].finished)
			fail(w, "guest never finished", what);
		if (v[i].writer_failed) {
			snprintf(d, sizeof(d), "%s: wait status %d", what,
				 v[i].writer_failed);
			fail(w, "the writer during the run", d);
		}
	}
	if (end == END_CLEAN && srv.error) {
		snprintf(err, sizeof(err), "%s: %s", what,
			 strerror(-srv.error));
		fail(w, "serving faults failed", err);
	}
	free(v);
	if (getenv("MODEL_TRACE"))
		fprintf(stderr, "%s\n", what);
	return 0;
}

static void count_message(void *arg, enum log_level level, const char *msg)
{
	(void)level;
	(void)msg;
	__atomic_add_fetch((unsigned long *)arg, 1, __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
	struct zero_hugetlb_resv resv = ZERO_HUGETLB_RESV_INIT;
	unsigned int seeds = argc > 1 ? (unsigned int)atoi(argv[1]) : 8;
	unsigned int first = getenv("MODEL_SEED") ?
				     (unsigned int)atoi(getenv("MODEL_SEED")) :
				     1;
	unsigned long per = argc > 2 ? strtoul(argv[2], NULL, 10) : 40;
	struct world w = { 0 };
	unsigned long total = 0, failures = 0, ends[END_NR] = { 0 };
	unsigned long between = 0, during = 0;
	static unsigned long messages;
	char cmd[256];

	/*
	 * The engine runs here as in the zvmm program: its records go to
	 * the $ZVMM_STATE_DIR each launch sets (two, below), never to the
	 * host's /var/lib/zvmm.
	 */
	program_env_enable();

	/*
	 * The outside writer's launches warn (no record, pages allocated
	 * behind zvmm's back) and injected worker errors fail launches, as
	 * they should: zvmm's messages only with MODEL_TRACE, else counted.
	 * The model checks the promise itself, whatever zvmm says.
	 */
	if (getenv("MODEL_TRACE"))
		log_to_stderr();
	else
		log_set_sink(count_message, &messages);
	if (geteuid() != 0) {
		printf("model-life: SKIPPED: needs root (hugetlbfs mount, userfaultfd)\n");
		return 0;
	}
	if (zero_hugetlb_reserve(SZ_2M, PAGES, &resv)) {
		printf("model-life: SKIPPED: cannot reserve %d free 2 MiB hugepages\n",
		       PAGES);
		return 0;
	}
	snprintf(w.mnt, sizeof(w.mnt), "/tmp/zvmm-test-model.%d",
		 (int)getpid());
	snprintf(w.pool, sizeof(w.pool), "%s/pool", w.mnt);
	snprintf(w.state, sizeof(w.state), "/tmp/zvmm-test-mstate.%d",
		 (int)getpid());
	snprintf(w.state2, sizeof(w.state2), "%s.other", w.state);
	setenv("ZVMM_STATE_DIR", w.state, 1);
	if (mkdir(w.mnt, 0700) ||
	    mount("none", w.mnt, "hugetlbfs", 0, "pagesize=2M")) {
		printf("model-life: SKIPPED: cannot mount hugetlbfs: %s\n",
		       strerror(errno));
		rmdir(w.mnt);
		zero_hugetlb_release(&resv);
		return 0;
	}
	for (unsigned int s = first; s < first + seeds; s++) {
		w.seed = s;
		w.id = s;
		w.launches = w.failures = 0;
		unlink(w.pool); /* every seed starts from a fresh pool */
		for (unsigned long l = 0; l < per && !w.failures; l++)
			launch(&w);
		total += w.launches;
		failures += w.failures;
		for (int e = 0; e < END_NR; e++)
			ends[e] += w.endings[e];
		memset(w.endings, 0, sizeof(w.endings));
		between += w.writers_between;
		during += w.writers_during;
		w.writers_between = w.writers_during = 0;
	}
	unlink(w.pool);
	umount2(w.mnt, MNT_DETACH);
	rmdir(w.mnt);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", w.state, w.state2);
	if (system(cmd)) {
		/* a leftover directory in /tmp is harmless */
	}
	zero_hugetlb_release(&resv);
	printf("model-life: %lu launches over %u seeds (clean %lu, guest crash %lu, signal %lu, worker error %lu, zvmm dies %lu; outside writer before %lu, during %lu): %lu failed",
	       total, seeds, ends[END_CLEAN], ends[END_GUEST_CRASH],
	       ends[END_SIGNAL], ends[END_WORKER_ERROR], ends[END_ZVMM_DIES],
	       between, during, failures);
	if (messages)
		printf(" (%lu messages from zvmm, shown with MODEL_TRACE=1)",
		       __atomic_load_n(&messages, __ATOMIC_RELAXED));
	printf("\n");
	return failures ? 1 : 0;
}
