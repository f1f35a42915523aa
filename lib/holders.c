// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "holders.h"

/* The first of @n files, not found yet, that is @dev:@ino; -1 if none. */
static int which_file(const struct stat *st, unsigned int n, const long *pid,
		      dev_t dev, ino_t ino)
{
	for (unsigned int i = 0; i < n; i++)
		if (pid[i] < 0 && st[i].st_ino == ino && st[i].st_dev == dev)
			return (int)i;
	return -1;
}

static void comm_of(long pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(comm, len, "?");
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
}

unsigned int holders_of(const struct stat *st, unsigned int n, long *pid,
			char (*comm)[HOLDER_COMM_LEN])
{
	long self = (long)getpid();
	unsigned int found = 0;
	struct dirent *de;
	DIR *proc;

	for (unsigned int i = 0; i < n; i++)
		pid[i] = -1;
	proc = n ? opendir("/proc") : NULL;
	if (!proc)
		return 0;
	while (found < n && (de = readdir(proc))) {
		char path[64], line[512];
		unsigned int before = found;
		struct dirent *fe;
		struct stat fst;
		long p;
		char *end;
		DIR *fds;
		FILE *f;
		int k;

		p = strtol(de->d_name, &end, 10);
		if (*end || p <= 0 || p == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", p);
		fds = opendir(path);
		while (fds && found < n && (fe = readdir(fds)))
			if (fe->d_name[0] != '.' &&
			    !fstatat(dirfd(fds), fe->d_name, &fst, 0) &&
			    (k = which_file(st, n, pid, fst.st_dev,
					    fst.st_ino)) >= 0) {
				pid[k] = p;
				found++;
			}
		if (fds)
			closedir(fds);
		snprintf(path, sizeof(path), "/proc/%ld/maps", p);
		f = found < n ? fopen(path, "re") : NULL;
		while (f && found < n && fgets(line, sizeof(line), f)) {
			unsigned int maj, min;
			unsigned long ino;

			if (sscanf(line, "%*x-%*x %*s %*x %x:%x %lu", &maj,
				   &min, &ino) == 3 &&
			    (k = which_file(st, n, pid, makedev(maj, min),
					    (ino_t)ino)) >= 0) {
				pid[k] = p;
				found++;
			}
		}
		if (f)
			fclose(f);
		if (found == before)
			continue;
		for (unsigned int i = 0; i < n; i++)
			if (pid[i] == p)
				comm_of(p, comm[i], sizeof(comm[i]));
	}
	closedir(proc);
	return found;
}

long holder_of(const struct stat *st, char *comm, size_t len)
{
	char c[1][HOLDER_COMM_LEN];
	long pid;

	if (!holders_of(st, 1, &pid, c))
		return -1;
	snprintf(comm, len, "%s", c[0]);
	return pid;
}
