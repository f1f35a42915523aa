// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/file.h"
#include "record.h"

#define RECORD_VERSION 1

struct identity {
	uint64_t version, device, inode, size, page_size, pages;
};

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

static int identity_of(const struct zero_mem *m, struct identity *id)
{
	struct stat st;

	if (fstat(m->fd, &st))
		return -errno;
	*id = (struct identity){
		.version = RECORD_VERSION,
		.device = (uint64_t)st.st_dev,
		.inode = (uint64_t)st.st_ino,
		.size = (uint64_t)st.st_size,
		.page_size = m->page_bytes,
		.pages = m->nr_pages,
	};
	return 0;
}

/* FNV-1a over the fields: an edit or a cut shows, a forgery is not the
 * threat (the record directory is root's). */
static uint64_t checksum(const struct identity *id)
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
	struct identity id = { 0 };
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

int zero_record_write(const struct zero_mem *m)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	struct identity id;
	FILE *f;
	int ret;

	for (uint64_t i = 0; i < m->nr_pages; i++)
		if (zero_page_get(m->pages, i) != ZP_ZERO)
			return -EINVAL;
	ret = zero_record_path(m, path, sizeof(path));
	if (!ret)
		ret = identity_of(m, &id);
	if (!ret)
		ret = file_mkdir_parents(path, 0700);
	if (ret)
		return ret;
	f = file_replace_open(path, tmp, sizeof(tmp));
	if (!f)
		return -errno;
	fprintf(f,
		"; zvmm warm-pool state record: every page of the pool file\n"
		"; below was zero when zvmm exited. Edit nothing: any change\n"
		"; makes the next launch scrub the pool again.\n"
		"[pool]\nversion = %" PRIu64 "\ndevice = %" PRIu64
		"\ninode = %" PRIu64 "\nsize = %" PRIu64
		"\npage_size = %" PRIu64 "\npages = %" PRIu64
		"\nstate = zero\nchecksum = %016" PRIx64 "\n",
		id.version, id.device, id.inode, id.size, id.page_size,
		id.pages, checksum(&id));
	return file_replace_commit(f, tmp, path);
}

struct parsed {
	struct identity id;
	uint64_t sum;
	unsigned int seen; /* bit per key */
	bool zero;
};

static int on_key(void *user, const char *section, const char *name,
		  const char *value)
{
	static const char *const keys[] = { "version", "device",    "inode",
					    "size",    "page_size", "pages" };
	struct parsed *p = user;
	uint64_t *f = &p->id.version;
	char *end;

	if (strcmp(section, "pool"))
		return 0;
	if (!strcmp(name, "state")) {
		p->zero = !strcmp(value, "zero");
		p->seen |= 1u << 6;
		return 1;
	}
	if (!strcmp(name, "checksum")) {
		p->sum = strtoull(value, &end, 16);
		p->seen |= 1u << 7;
		return *end == '\0' && end != value;
	}
	for (unsigned int i = 0; i < 6; i++)
		if (!strcmp(name, keys[i])) {
			f[i] = strtoull(value, &end, 10);
			p->seen |= 1u << i;
			return *end == '\0' && end != value;
		}
	return 0;
}

int zero_record_take(const struct zero_mem *m, bool *clean, char *why,
		     size_t len)
{
	struct parsed p = { 0 };
	char path[PATH_MAX], dummy[8];
	struct identity id;
	int ret, line;

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
	line = ini_parse(path, on_key, &p);
	if (line == -1) {
		snprintf(why, len, "no state record");
		return 0;
	}
	/* Consumed whatever it says. */
	if (unlink(path) && errno != ENOENT)
		return -errno;
	if (line || p.seen != 0xff || !p.zero)
		snprintf(why, len, "state record %s is malformed or incomplete",
			 path);
	else if (p.sum != checksum(&p.id))
		snprintf(why, len, "state record %s fails its checksum", path);
	else if (memcmp(&p.id, &id, sizeof(id)))
		snprintf(
			why, len,
			"state record %s describes another file, size or page size",
			path);
	else
		*clean = true;
	return 0;
}
