// SPDX-License-Identifier: MIT
/*
 * poison FILE SIZE [BYTE]: makes FILE (on hugetlbfs) SIZE bytes long and
 * writes BYTE (default 0xa5) over all of it, as a guest that used a warm
 * pool would have left it. For benchmarks of dirty pools.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long long size;
	int fd, byte;
	char *p;

	if (argc < 3) {
		fprintf(stderr, "usage: poison FILE SIZE [BYTE]\n");
		return 2;
	}
	size = strtoull(argv[2], NULL, 0);
	byte = argc > 3 ? (int)strtol(argv[3], NULL, 0) : 0xa5;
	fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size)) {
		perror(argv[1]);
		return 1;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(p, byte, size);
	munmap(p, size);
	close(fd);
	return 0;
}
