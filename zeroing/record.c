// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
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

/* A record is about 500 bytes and its path; anything bigger is not one. */
#define RECORD_MAX_BYTES 65536
/* Escaped path bytes on one line: libinih reads no more than 199. */
#define PATH_LINE 120
/* The numbers of a record: what the checksum covers before the path. */
#define NR_FIELDS (offsetof(struct zero_record, path) / sizeof(uint64_t))

_Static_assert(offsetof(struct zero_record, path) == 11 * sizeof(uint64_t),
	       "a record's numbers are its first fields, with no padding");
/* The worst path: every byte escaped, a line of "path = " per PATH_LINE. */
_Static_assert(640 + (3 * (PATH_MAX - 1) / (PATH_LINE - 2) + 1) *
				       (PATH_LINE + 8) <
		       ZERO_RECORD_TEXT_MAX,
	       "any record's text fits ZERO_RECORD_TEXT_MAX");
_Static_assert(ZERO_RECORD_TEXT_MAX < RECORD_MAX_BYTES,
	       "any record zvmm writes is read back");

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
		.version = ZERO_RECORD_VERSION,
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
 * FNV-1a over the fields, then the path's bytes when there is one (so a
 * record without one sums as before version 4): an edit or a cut shows.
 * It is no signature: what keeps a forged record out is the state
 * directory, which only the euid and root may write (safe_dir_open()).
 */
static uint64_t checksum(const struct zero_record *id)
{
	const uint64_t *f = &id->version;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t n = strnlen(id->path, sizeof(id->path));

	for (unsigned int i = 0; i < NR_FIELDS; i++)
		for (unsigned int b = 0; b < 8; b++) {
			h ^= (f[i] >> (8 * b)) & 0xff;
			h *= 0x100000001b3ull;
		}
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)id->path[i];
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

/*
 * A path byte written as itself: none that could end a line, start a
 * comment (';', '#'), be trimmed (white space) or be read as an escape.
 */
static bool path_literal(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("/._-+,@~", c));
}

/* snprintf() at offset @at of @buf: the offset after, cut or not. */
__attribute__((format(printf, 4, 5))) static size_t
append(char *buf, size_t len, size_t at, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(at < len ? buf + at : NULL, at < len ? len - at : 0, fmt,
		      ap);
	va_end(ap);
	return at + (n > 0 ? (size_t)n : 0);
}

int zero_record_format(const struct zero_record *r, char *buf, size_t len)
{
	size_t n, plen = strnlen(r->path, sizeof(r->path)), i = 0;

	n = append(
		buf, len, 0,
		"; zvmm warm-pool state record: every page of the pool file\n"
		"; below was zero when zvmm exited. Edit nothing: any change\n"
		"; makes the next launch scrub the pool again.\n"
		"[pool]\nversion = %" PRIu64 "\ndevice = %" PRIu64
		"\ninode = %" PRIu64 "\nsize = %" PRIu64
		"\npage_size = %" PRIu64 "\npages = %" PRIu64
		"\nmtime_ns = %" PRIu64 "\nctime_ns = %" PRIu64
		"\natime_ns = %" PRIu64 "\nboot_id = %016" PRIx64 "%016" PRIx64
		"\n",
		r->version, r->device, r->inode, r->size, r->page_size,
		r->pages, r->mtime_ns, r->ctime_ns, r->atime_ns, r->boot_hi,
		r->boot_lo);
	/* A long path goes over several lines, each read as more of it. */
	while (i < plen) {
		size_t line = 0;

		n = append(buf, len, n, "path = ");
		for (; i < plen; i++) {
			unsigned char c = (unsigned char)r->path[i];

			if (line + (path_literal(c) ? 1 : 3) > PATH_LINE)
				break;
			if (path_literal(c)) {
				n = append(buf, len, n, "%c", c);
				line++;
			} else {
				n = append(buf, len, n, "%%%02X", c);
				line += 3;
			}
		}
		n = append(buf, len, n, "\n");
	}
	n = append(buf, len, n, "state = zero\nchecksum = %016" PRIx64 "\n",
		   checksum(r));
	return n > INT_MAX ? INT_MAX : (int)n;
}

/*
 * Whether the pool file of @r could still be found by the record: its
 * path names a file of the device and inode it recorded, with the ctime
 * it recorded. When not, no launch can ever trust it again:
 * zero_record_take() compares all three with the file it opened, and
 * ctime never goes back (a file of the same inode number made since,
 * after the first was removed, has a later one). An lstat(2) that fails
 * otherwise than for a missing file (EACCES, EIO) decides nothing: kept.
 *
 * The last component is not followed. A symbolic link planted on the
 * path above it (by whoever may write a directory there: the pool's own
 * directory is inside the trust boundary) can only make a record look
 * gone, which removes it (the pool is scrubbed once), or look present,
 * which keeps one that zero_record_take() judges by the file it opens,
 * never by this path: trust is not moved either way.
 */
static bool record_file_there(const struct zero_record *r)
{
	struct stat st;

	if (fstatat(AT_FDCWD, r->path, &st, AT_SYMLINK_NOFOLLOW))
		return errno != ENOENT && errno != ENOTDIR;
	return (uint64_t)st.st_dev == r->device &&
	       (uint64_t)st.st_ino == r->inode &&
	       ns(&st.st_ctim) == r->ctime_ns;
}

/* Whether @a and @b are the same directory entry, unchanged. */
static bool same_entry(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * Keeps the state directory to one record per pool file that exists
 * (the file @skip, about to be written, aside). Removed:
 * - a file of a record's name that is no record (malformed, its checksum
 *   fails) or is not named after the device and inode it describes;
 * - a record written before this boot: inode numbers repeat;
 * - a record of another version: this zvmm trusts none, and one of an
 *   older zvmm has no path to tell whether its file is still there;
 * - a record whose file is gone or changed (record_file_there()).
 * A record whose file is there as it recorded it stays, another launch's
 * just written included, as does a file that cannot be read (a symbolic
 * link, another owner's). Removing a record never makes a pool less
 * safe, only scrubbed once more at its next launch.
 *
 * A record read here may be replaced meanwhile by a launch writing a
 * fresh one for the same file (a new inode, renamed over it): the entry
 * is checked again just before it is removed, and a replaced one stays.
 * Between that check and unlinkat(2) (microseconds) a fresh record could
 * still be lost, which costs its pool one scrub.
 */
static void remove_stale(int dirfd, const struct zero_record *now,
			 const char *skip)
{
	struct stat before, again;
	struct zero_record r;
	struct dirent *de;
	char *text, name[64];
	size_t len;
	bool stale;
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
		    strcmp(de->d_name + n - 6, ".state") ||
		    !strcmp(de->d_name, skip))
			continue;
		if (fstatat(dirfd, de->d_name, &before, AT_SYMLINK_NOFOLLOW) ||
		    safe_read_at(dirfd, de->d_name, RECORD_MAX_BYTES, &text,
				 &len))
			continue;
		stale = zero_record_parse(text, len, &r) ||
			r.boot_hi != now->boot_hi ||
			r.boot_lo != now->boot_lo ||
			r.version != ZERO_RECORD_VERSION || !r.path[0] ||
			snprintf(name, sizeof(name),
				 "pool-%" PRIu64 "-%" PRIu64 ".state", r.device,
				 r.inode) >= (int)sizeof(name) ||
			strcmp(name, de->d_name) || !record_file_there(&r);
		free(text);
		if (stale &&
		    !fstatat(dirfd, de->d_name, &again, AT_SYMLINK_NOFOLLOW) &&
		    same_entry(&before, &again))
			unlinkat(dirfd, de->d_name, 0);
	}
	closedir(d);
}

/*
 * The pool file's absolute path into r->path: its directory as the
 * kernel names the fd zvmm opened the pool through (/proc/self/fd), so
 * neither a relative mem.pool_path nor a chdir(2) since matters and a
 * directory renamed during the launch is named as it is now; then its
 * name. It must name the file itself now (lstat(2): the same device and
 * inode), or it would let the record be pruned while its file lives:
 * -ESTALE when it does not (the file or its directory was removed or
 * renamed), and no record is written.
 */
static int record_path(const struct zero_mem *m, const struct stat *st,
		       struct zero_record *r)
{
	char proc[64];
	struct stat now;
	ssize_t n;

	if (m->dirfd < 0)
		return -EINVAL;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", m->dirfd);
	n = readlink(proc, r->path, sizeof(r->path));
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(r->path))
		return -ENAMETOOLONG;
	r->path[n] = '\0';
	/* Not absolute: outside this process's root. */
	if (r->path[0] != '/')
		return -ESTALE;
	if ((size_t)n + 1 + strlen(m->name) >= sizeof(r->path))
		return -ENAMETOOLONG;
	snprintf(r->path + n, sizeof(r->path) - (size_t)n, "%s%s",
		 n > 1 ? "/" : "", m->name);
	if (fstatat(AT_FDCWD, r->path, &now, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT || errno == ENOTDIR ? -ESTALE : -errno;
	return now.st_dev == st->st_dev && now.st_ino == st->st_ino ? 0 :
								      -ESTALE;
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
		ret = record_path(m, &st, &id);
	if (!ret)
		ret = record_name(&st, name, sizeof(name));
	if (!ret &&
	    zero_record_format(&id, text, sizeof(text)) >= (int)sizeof(text))
		ret = -EOVERFLOW;
	if (!ret) {
		remove_stale(dfd, &id, name);
		ret = safe_write_at(dfd, name, text, strlen(text));
	}
	close(dfd);
	return ret;
}

struct parsed {
	struct zero_record id;
	uint64_t sum;
	size_t path_len;
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

/*
 * One line's part of the path, escaped as zero_record_format() escapes
 * it, appended to what the lines before gave: a byte that needs no
 * escape in one, or a NUL, is refused (text zvmm does not write).
 */
static bool parse_path(const char *s, struct parsed *p)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = p->id.path;

	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!path_literal(c)) {
			const char *h = c == '%' && s[1] ? strchr(hex, s[1]) :
							   NULL;
			const char *l = h && s[2] ? strchr(hex, s[2]) : NULL;

			if (!l)
				return false;
			c = (unsigned char)((h - hex) << 4 | (l - hex));
			if (!c || path_literal(c))
				return false;
			s += 2;
		}
		if (p->path_len + 1 >= sizeof(p->id.path))
			return false;
		out[p->path_len++] = (char)c;
	}
	return true;
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
	if (!strcmp(name, "path"))
		return parse_path(value, p);
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
	/* The path is optional (none before version 4), but absolute. */
	if (line || p.seen != ALL_KEYS || !p.zero ||
	    (p.path_len && p.id.path[0] != '/'))
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
	else if (rec.version != id.version)
		snprintf(
			why, len,
			"state record %s/%s was written by another version of zvmm",
			dir, name);
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
	/* The numbers alone: the path is where the file was, not what. */
	else if (memcmp(&rec, &id, offsetof(struct zero_record, path)))
		snprintf(
			why, len,
			"state record %s/%s describes another file, size or page size",
			dir, name);
	else
		*clean = true;
	return 0;
}
