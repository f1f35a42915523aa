// SPDX-License-Identifier: MIT
#include <ctype.h>
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
#include "record.h"

#define RECORD_VERSION 2
/* A record is about 330 bytes; anything much bigger is not one. */
#define RECORD_MAX_BYTES 65536

static int state_dir(char *buf, size_t len)
{
	const char *d = getenv("ZVMM_STATE_DIR"), *x, *home;

	if (d && *d)
		return snprintf(buf, len, "%s", d) < (int)len ? 0 :
								-ENAMETOOLONG;
	if (geteuid() == 0)
		return snprintf(buf, len, "/var/lib/zvmm") < (int)len ?
			       0 :
			       -ENAMETOOLONG;
	x = getenv("XDG_STATE_HOME");
	if (x && *x)
		return snprintf(buf, len, "%s/zvmm", x) < (int)len ?
			       0 :
			       -ENAMETOOLONG;
	home = getenv("HOME");
	if (!home || !*home)
		return -ENOENT;
	return snprintf(buf, len, "%s/.local/state/zvmm", home) < (int)len ?
		       0 :
		       -ENAMETOOLONG;
}

static int identity_of(const struct zero_mem *m, struct zero_record *id)
{
	struct stat st;

	if (fstat(m->fd, &st))
		return -errno;
	*id = (struct zero_record){
		.version = RECORD_VERSION,
		.device = (uint64_t)st.st_dev,
		.inode = (uint64_t)st.st_ino,
		.size = (uint64_t)st.st_size,
		.page_size = m->page_bytes,
		.pages = m->nr_pages,
		.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			    (uint64_t)st.st_mtim.tv_nsec,
	};
	return 0;
}

int zero_record_stamp(const struct zero_mem *m)
{
	struct timespec t[2] = { { .tv_nsec = UTIME_OMIT } };
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
	return futimens(m->fd, t) ? -errno : 0;
}

/* FNV-1a over the fields: an edit or a cut shows, a forgery is not the
 * threat (the record directory is root's). */
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

int zero_record_path(const struct zero_mem *m, char *buf, size_t len)
{
	struct zero_record id = { 0 };
	char dir[PATH_MAX];
	int ret;

	ret = state_dir(dir, sizeof(dir));
	if (!ret)
		ret = identity_of(m, &id);
	if (ret)
		return ret;
	return snprintf(buf, len, "%s/pool-%" PRIu64 "-%" PRIu64 ".state", dir,
			id.device, id.inode) < (int)len ?
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
		"\nmtime_ns = %" PRIu64 "\nstate = zero\nchecksum = %016" PRIx64
		"\n",
		r->version, r->device, r->inode, r->size, r->page_size,
		r->pages, r->mtime_ns, checksum(r));
}

int zero_record_write(const struct zero_mem *m)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16], text[ZERO_RECORD_TEXT_MAX];
	struct zero_record id;
	FILE *f;
	int ret;

	for (uint64_t i = 0; i < m->nr_pages; i++)
		if (zero_page_get(m->pages, i) != ZP_ZERO)
			return -EINVAL;
	ret = zero_record_path(m, path, sizeof(path));
	if (!ret)
		ret = zero_record_stamp(m);
	if (!ret)
		ret = identity_of(m, &id);
	if (!ret)
		ret = file_mkdir_parents(path, 0700);
	if (ret)
		return ret;
	if (zero_record_format(&id, text, sizeof(text)) >= (int)sizeof(text))
		return -EOVERFLOW;
	f = file_replace_open(path, tmp, sizeof(tmp));
	if (!f)
		return -errno;
	fputs(text, f);
	return file_replace_commit(f, tmp, path);
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

static int on_key(void *user, const char *section, const char *name,
		  const char *value)
{
	static const char *const keys[] = { "version", "device",    "inode",
					    "size",    "page_size", "pages",
					    "mtime_ns" };
	struct parsed *p = user;
	uint64_t *f = &p->id.version;

	if (strcmp(section, "pool"))
		return 0;
	if (!strcmp(name, "state")) {
		p->zero = !strcmp(value, "zero");
		p->seen |= 1u << 7;
		return 1;
	}
	if (!strcmp(name, "checksum")) {
		p->seen |= 1u << 8;
		return parse_u64(value, 16, &p->sum);
	}
	for (unsigned int i = 0; i < 7; i++)
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
	if (line || p.seen != 0x1ff || !p.zero)
		return -EINVAL;
	if (p.sum != checksum(&p.id))
		return -EBADMSG;
	*r = p.id;
	return 0;
}

int zero_record_take(const struct zero_mem *m, bool *clean, char *why,
		     size_t len)
{
	struct zero_record id, rec;
	char path[PATH_MAX], dummy[8], *text;
	size_t text_len;
	int fd, ret;

	*clean = false;
	if (!why) {
		why = dummy;
		len = sizeof(dummy);
	}
	ret = zero_record_path(m, path, sizeof(path));
	if (!ret)
		ret = identity_of(m, &id);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "no state record");
		return 0;
	}
	ret = file_read_fd(fd, RECORD_MAX_BYTES, &text, &text_len);
	close(fd);
	/* Consumed whatever it says. */
	if (unlink(path) && errno != ENOENT) {
		int e = errno;

		if (!ret)
			free(text);
		return -e;
	}
	if (ret) {
		snprintf(why, len, "state record %s cannot be read: %s", path,
			 strerror(-ret));
		return 0;
	}
	ret = zero_record_parse(text, text_len, &rec);
	free(text);
	if (ret == -EBADMSG)
		snprintf(why, len, "state record %s fails its checksum", path);
	else if (ret)
		snprintf(why, len, "state record %s is malformed or incomplete",
			 path);
	else if (memcmp(&rec, &id, sizeof(id)))
		snprintf(
			why, len,
			"state record %s describes another file, size or page size",
			path);
	else
		*clean = true;
	return 0;
}
