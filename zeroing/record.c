// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lib/file.h"
#include "../lib/inibuf.h"
#include "../lib/log.h"
#include "../lib/safefile.h"
#include "record.h"

#define RECORD_VERSION 3
/* A record is about 450 bytes; anything much bigger is not one. */
#define RECORD_MAX_BYTES 65536

static int state_dir(const struct zero_mem *m, char *buf, size_t len)
{
	const char *d = program_getenv("ZVMM_STATE_DIR"), *x, *home;
	int n;

	/* The guest's own ([pool] state_dir) before the zvmm program's. */
	if (m->state_dir[0])
		d = m->state_dir;
	if (d)
		n = snprintf(buf, len, "%s", d);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/var/lib/zvmm");
	else if ((x = safe_getenv("XDG_STATE_HOME")))
		n = snprintf(buf, len, "%s/zvmm", x);
	else if ((home = safe_getenv("HOME")))
		n = snprintf(buf, len, "%s/.local/state/zvmm", home);
	else
		return -ENOENT;
	return n < (int)len ? 0 : -ENAMETOOLONG;
}

/*
 * The state directory, checked: -EPERM when it is outside the trust
 * boundary, said once per process, since then no record is read or
 * written there and every pool is scrubbed.
 */
static int open_state_dir(const struct zero_mem *m, bool create, char *dir,
			  size_t dir_len)
{
	static int warned;
	char why[PATH_MAX + 160];
	int fd, ret;

	ret = state_dir(m, dir, dir_len);
	if (ret) {
		/* Nowhere to keep records: none is read, none written. */
		if (create &&
		    !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			pr_warn("no state directory ($ZVMM_STATE_DIR, $XDG_STATE_HOME or $HOME): no pool state record is written, so pools are scrubbed at every launch");
		return create ? -EPERM : -ENOENT;
	}
	fd = safe_dir_open(dir, create, why, sizeof(why));
	if (fd == -EPERM && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		pr_warn("state directory %s; no pool state record is read or written there, so pools are scrubbed at every launch",
			why);
	return fd;
}

/* The boot's id: inode numbers repeat after a reboot or a remount. */
static void boot_id(uint64_t *hi, uint64_t *lo)
{
	char text[64], hex[33];
	unsigned int n = 0;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	*hi = *lo = 0;
	if (!f)
		return;
	if (fgets(text, sizeof(text), f))
		for (const char *p = text; *p && n < 32; p++)
			if (isxdigit((unsigned char)*p))
				hex[n++] = *p;
	fclose(f);
	if (n != 32)
		return;
	hex[32] = '\0';
	*lo = strtoull(hex + 16, NULL, 16);
	hex[16] = '\0';
	*hi = strtoull(hex, NULL, 16);
}

static uint64_t ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

int zero_record_identity(const struct zero_mem *m, const struct stat *st,
			 struct zero_record *r)
{
	*r = (struct zero_record){
		.version = RECORD_VERSION,
		.device = (uint64_t)st->st_dev,
		.inode = (uint64_t)st->st_ino,
		.size = (uint64_t)st->st_size,
		.page_size = m->page_bytes,
		.pages = m->nr_pages,
		.mtime_ns = ns(&st->st_mtim),
		.ctime_ns = ns(&st->st_ctim),
		.atime_ns = ns(&st->st_atim),
	};
	boot_id(&r->boot_hi, &r->boot_lo);
	return r->boot_hi || r->boot_lo ? 0 : -ENOENT;
}

int zero_record_stamp(const struct zero_mem *m)
{
	struct timespec t[2];
	struct stat st;

	if (fstat(m->fd, &st))
		return -errno;
	clock_gettime(CLOCK_REALTIME, &t[1]);
	/* Strictly later, even twice within one tick of the clock. */
	if (t[1].tv_sec < st.st_mtim.tv_sec ||
	    (t[1].tv_sec == st.st_mtim.tv_sec &&
	     t[1].tv_nsec <= st.st_mtim.tv_nsec)) {
		t[1] = st.st_mtim;
		if (++t[1].tv_nsec == 1000000000) {
			t[1].tv_sec++;
			t[1].tv_nsec = 0;
		}
	}
	/*
	 * atime 1 ns before mtime: earlier, so the next mmap(2) or read(2)
	 * of the file moves it (relatime), and a value the kernel's coarse
	 * clock does not write, so that move shows even within one tick of
	 * the stamp.
	 */
	t[0] = t[1];
	if (t[0].tv_nsec-- == 0) {
		t[0].tv_sec--;
		t[0].tv_nsec = 999999999;
	}
	return futimens(m->fd, t) ? -errno : 0;
}

static bool same_times(const struct stat *a, const struct stat *b)
{
	return a->st_atim.tv_sec == b->st_atim.tv_sec &&
	       a->st_atim.tv_nsec == b->st_atim.tv_nsec &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * Waits until the kernel's coarse clock, which stamps ctime, is past
 * @st's ctime (at most a tick, 1-4 ms), and checks that nothing changed
 * the file meanwhile: a later change of its times, utimensat(2) setting
 * them back included, then always moves ctime away from the recorded
 * one. -EAGAIN when something did change.
 */
static int settle_ctime(const struct zero_mem *m, const struct stat *st)
{
	struct timespec now;
	struct stat again;

	/* Bounded: a wall clock set back meanwhile gives up, no record. */
	for (int tries = 0;; tries++) {
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		if (now.tv_sec > st->st_ctim.tv_sec ||
		    (now.tv_sec == st->st_ctim.tv_sec &&
		     now.tv_nsec > st->st_ctim.tv_nsec))
			break;
		if (tries == 200)
			return -EAGAIN;
		usleep(500);
	}
	if (fstat(m->fd, &again))
		return -errno;
	return same_times(st, &again) ? 0 : -EAGAIN;
}
/*
 * FNV-1a over the fields: an edit or a cut shows. It is no signature:
 * what keeps a forged record out is the state directory, which only the
 * euid and root may write (safe_dir_open()).
 */
static uint64_t checksum(const struct zero_record *id)
{
	const uint64_t *f = &id->version;
	uint64_t h = 0xcbf29ce484222325ull;

	for (unsigned int i = 0; i < sizeof(*id) / sizeof(uint64_t); i++)
		for (unsigned int b = 0; b < 8; b++) {
			h ^= (f[i] >> (8 * b)) & 0xff;
			h *= 0x100000001b3ull;
		}
	return h;
}

static int record_name(const struct stat *st, char *buf, size_t len)
{
	return snprintf(buf, len, "pool-%" PRIu64 "-%" PRIu64 ".state",
			(uint64_t)st->st_dev, (uint64_t)st->st_ino) < (int)len ?
		       0 :
		       -ENAMETOOLONG;
}

int zero_record_format(const struct zero_record *r, char *buf, size_t len)
{
	return snprintf(
		buf, len,
		"; zvmm warm-pool state record: every page of the pool file\n"
		"; below was zero when zvmm exited. Edit nothing: any change\n"
		"; makes the next launch scrub the pool again.\n"
		"[pool]\nversion = %" PRIu64 "\ndevice = %" PRIu64
		"\ninode = %" PRIu64 "\nsize = %" PRIu64
		"\npage_size = %" PRIu64 "\npages = %" PRIu64
		"\nmtime_ns = %" PRIu64 "\nctime_ns = %" PRIu64
		"\natime_ns = %" PRIu64 "\nboot_id = %016" PRIx64 "%016" PRIx64
		"\nstate = zero\nchecksum = %016" PRIx64 "\n",
		r->version, r->device, r->inode, r->size, r->page_size,
		r->pages, r->mtime_ns, r->ctime_ns, r->atime_ns, r->boot_hi,
		r->boot_lo, checksum(r));
}

/*
 * Records written before this boot describe files that may be gone, and
 * whose inode numbers another file may have now: removed, as is a file
 * there that is no record at all but has a record's name.
 */
static void remove_stale(int dirfd, const struct zero_record *now)
{
	struct dirent *de;
	struct zero_record r;
	char *text;
	size_t len;
	DIR *d;
	int fd;

	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (strncmp(de->d_name, "pool-", 5) || n < 6 ||
		    strcmp(de->d_name + n - 6, ".state"))
			continue;
		if (safe_read_at(dirfd, de->d_name, RECORD_MAX_BYTES, &text,
				 &len))
			continue;
		if (zero_record_parse(text, len, &r) ||
		    r.boot_hi != now->boot_hi || r.boot_lo != now->boot_lo)
			unlinkat(dirfd, de->d_name, 0);
		free(text);
	}
	closedir(d);
}

int zero_record_write(const struct zero_mem *m, zero_record_check_fn *alone)
{
	char dir[PATH_MAX], name[64], text[ZERO_RECORD_TEXT_MAX], why[512];
	struct zero_record id;
	struct stat st;
	int dfd, ret;

	for (uint64_t i = 0; i < m->nr_pages; i++)
		if (zero_page_get(m->pages, i) != ZP_ZERO)
			return -EINVAL;
	dfd = open_state_dir(m, true, dir, sizeof(dir));
	if (dfd < 0)
		return dfd;
	ret = zero_record_stamp(m);
	if (!ret && fstat(m->fd, &st))
		ret = -errno;
	/*
	 * After the stamp, not before: a process that mapped the file
	 * before it holds an open file description the lease probe sees,
	 * and one that maps it after moves atime off the stamp's, which
	 * settle_ctime() compares. (The stamp itself would hide an atime
	 * moved before it.)
	 */
	if (!ret && alone)
		ret = alone(m, why, sizeof(why));
	if (!ret)
		ret = settle_ctime(m, &st);
	if (!ret)
		ret = zero_record_identity(m, &st, &id);
	if (!ret)
		ret = record_name(&st, name, sizeof(name));
	if (!ret &&
	    zero_record_format(&id, text, sizeof(text)) >= (int)sizeof(text))
		ret = -EOVERFLOW;
	if (!ret) {
		remove_stale(dfd, &id);
		ret = safe_write_at(dfd, name, text, strlen(text));
	}
	close(dfd);
	return ret;
}

struct parsed {
	struct zero_record id;
	uint64_t sum;
	unsigned int seen; /* bit per key */
	bool zero;
};

/*
 * Digits only, as zero_record_format() writes them: strtoull() alone
 * would take "-1" or "+7" and turn an overflow into UINT64_MAX.
 */
static bool parse_u64(const char *s, int base, uint64_t *out)
{
	unsigned char c = (unsigned char)s[0];
	char *end;

	if (base == 16 ? !isxdigit(c) : !isdigit(c))
		return false;
	errno = 0;
	*out = strtoull(s, &end, base);
	return !errno && *end == '\0';
}

/* 32 hex digits, as the kernel's boot id without its dashes. */
static bool parse_boot(const char *s, uint64_t *hi, uint64_t *lo)
{
	char h[17];

	if (strlen(s) != 32)
		return false;
	for (int i = 0; i < 32; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	memcpy(h, s, 16);
	h[16] = '\0';
	return parse_u64(h, 16, hi) && parse_u64(s + 16, 16, lo);
}

#define NR_NUM_KEYS 9
#define KEY_BOOT NR_NUM_KEYS
#define KEY_STATE (NR_NUM_KEYS + 1)
#define KEY_SUM (NR_NUM_KEYS + 2)
#define ALL_KEYS ((1u << (NR_NUM_KEYS + 3)) - 1)

static int on_key(void *user, const char *section, const char *name,
		  const char *value)
{
	static const char *const keys[NR_NUM_KEYS] = {
		"version", "device",   "inode",	   "size",     "page_size",
		"pages",   "mtime_ns", "ctime_ns", "atime_ns",
	};
	struct parsed *p = user;
	uint64_t *f = &p->id.version;

	if (strcmp(section, "pool"))
		return 0;
	if (!strcmp(name, "state")) {
		p->zero = !strcmp(value, "zero");
		p->seen |= 1u << KEY_STATE;
		return 1;
	}
	if (!strcmp(name, "checksum")) {
		p->seen |= 1u << KEY_SUM;
		return parse_u64(value, 16, &p->sum);
	}
	if (!strcmp(name, "boot_id")) {
		p->seen |= 1u << KEY_BOOT;
		return parse_boot(value, &p->id.boot_hi, &p->id.boot_lo);
	}
	for (unsigned int i = 0; i < NR_NUM_KEYS; i++)
		if (!strcmp(name, keys[i])) {
			p->seen |= 1u << i;
			return parse_u64(value, 10, &f[i]);
		}
	return 0;
}

int zero_record_parse(const char *text, size_t len, struct zero_record *r)
{
	struct parsed p = { 0 };
	bool too_long;
	int line;

	line = inibuf_parse(text, len, on_key, &p, &too_long);
	if (line || p.seen != ALL_KEYS || !p.zero)
		return -EINVAL;
	if (p.sum != checksum(&p.id))
		return -EBADMSG;
	*r = p.id;
	return 0;
}

int zero_record_take(const struct zero_mem *m, const struct stat *st,
		     bool *clean, char *why, size_t len)
{
	char dir[PATH_MAX], name[64], dummy[8], *text;
	struct zero_record id, rec;
	size_t text_len;
	int dfd, ret;

	*clean = false;
	if (!why) {
		why = dummy;
		len = sizeof(dummy);
	}
	ret = record_name(st, name, sizeof(name));
	if (!ret)
		ret = zero_record_identity(m, st, &id);
	if (ret)
		return ret;
	dfd = open_state_dir(m, false, dir, sizeof(dir));
	if (dfd == -ENOENT) {
		snprintf(why, len, "no state record");
		return 0;
	}
	if (dfd < 0) {
		snprintf(why, len, "the state directory is not usable");
		return 0;
	}
	ret = safe_read_at(dfd, name, RECORD_MAX_BYTES, &text, &text_len);
	/*
	 * Consumed whatever it says, a symbolic link included. One that
	 * cannot be removed is not trusted either; the stamp that follows
	 * outdates it all the same.
	 */
	if (ret != -ENOENT && unlinkat(dfd, name, 0) && errno != ENOENT) {
		int e = errno;

		if (!ret)
			free(text);
		close(dfd);
		snprintf(why, len, "state record %s/%s cannot be removed: %s",
			 dir, name, strerror(e));
		return 0;
	}
	close(dfd);
	if (ret == -ENOENT) {
		snprintf(why, len, "no state record");
		return 0;
	}
	if (ret == -EPERM) {
		snprintf(
			why, len,
			"state record %s/%s is a symbolic link, not a regular file, or owned or writable by another user",
			dir, name);
		return 0;
	}
	if (ret) {
		snprintf(why, len, "state record %s/%s cannot be read: %s", dir,
			 name, strerror(-ret));
		return 0;
	}
	ret = zero_record_parse(text, text_len, &rec);
	free(text);
	if (ret == -EBADMSG)
		snprintf(why, len, "state record %s/%s fails its checksum", dir,
			 name);
	else if (ret)
		snprintf(why, len,
			 "state record %s/%s is malformed or incomplete", dir,
			 name);
	else if (rec.boot_hi != id.boot_hi || rec.boot_lo != id.boot_lo)
		snprintf(why, len,
			 "state record %s/%s was written before the last boot",
			 dir, name);
	else if (rec.mtime_ns != id.mtime_ns || rec.ctime_ns != id.ctime_ns)
		snprintf(
			why, len,
			"the pool file was changed (its mtime or ctime moved) since its state record was written");
	else if (rec.atime_ns != id.atime_ns)
		snprintf(
			why, len,
			"the pool file was mapped or read by another process (its atime moved) since its state record was written");
	else if (memcmp(&rec, &id, sizeof(id)))
		snprintf(
			why, len,
			"state record %s/%s describes another file, size or page size",
			dir, name);
	else
		*clean = true;
	return 0;
}
