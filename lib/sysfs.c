// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sysfs.h"

int sysfs_read_long(const char *path, long *v)
{
	char buf[32], *end;
	ssize_t n;
	long val;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? (int)n : -EIO;
	buf[n] = '\0';
	val = strtol(buf, &end, 10);
	if (end == buf)
		return -EIO;
	*v = val;
	return 0;
}

int sysfs_read_field(const char *path, const char *key, uint64_t *v)
{
	size_t klen = strlen(key);
	char line[256], *end;
	int ret = -ENODATA;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long val;

		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		val = strtoull(line + klen + 1, &end, 10);
		if (end == line + klen + 1)
			continue;
		*v = val;
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}
