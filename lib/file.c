// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

int file_mkdir_parents(const char *path, mode_t mode)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

FILE *file_replace_open(const char *path, char *tmp, size_t len)
{
	if (snprintf(tmp, len, "%s.tmp.%d", path, (int)getpid()) >= (int)len) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return fopen(tmp, "we");
}

int file_replace_commit(FILE *f, const char *tmp, const char *path)
{
	int ret = 0;

	errno = 0;
	if (fflush(f) || ferror(f) || fsync(fileno(f)))
		ret = errno ? -errno : -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}
