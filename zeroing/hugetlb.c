// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "../lib/sysfs.h"
#include "hugetlb.h"

#define RESV_SLOTS 4

/* What the async release needs, prepared while reserving. */
static struct {
	volatile sig_atomic_t active;
	char path[96];
	char old[24];
} slots[RESV_SLOTS];

const char *zero_hugetlb_path(uint64_t page_bytes, const char *file, char *buf,
			      size_t len)
{
	snprintf(buf, len, "/sys/kernel/mm/hugepages/hugepages-%llukB/%s",
		 (unsigned long long)(page_bytes >> 10), file);
	return buf;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return 0;
}

int zero_hugetlb_read(uint64_t page_bytes, const char *file, long *v)
{
	char path[96];

	return sysfs_read_long(
		zero_hugetlb_path(page_bytes, file, path, sizeof(path)), v);
}

int zero_hugetlb_counts(uint64_t page_bytes, long *nr, long *free_pages)
{
	int ret = zero_hugetlb_read(page_bytes, "nr_hugepages", nr);

	if (ret)
		return ret;
	return zero_hugetlb_read(page_bytes, "free_hugepages", free_pages);
}

static int set_nr(uint64_t page_bytes, long nr)
{
	char path[96], val[24];

	snprintf(val, sizeof(val), "%ld", nr);
	return write_str(zero_hugetlb_path(page_bytes, "nr_hugepages", path,
					   sizeof(path)),
			 val);
}

/*
 * The pool's size and the pages in it that a new mapping can have: free
 * ones less those reserved by another's shared mapping (a pool file keeps
 * its reservations until truncated; another launch holds them while it
 * maps them). Counting reserved pages as free made a reservation succeed
 * that the next mmap() refused.
 */
static int usable(uint64_t page_bytes, long *nr, long *avail)
{
	long nfree, resv = 0;
	int ret = zero_hugetlb_counts(page_bytes, nr, &nfree);

	if (!ret && zero_hugetlb_read(page_bytes, "resv_hugepages", &resv))
		resv = 0;
	*avail = nfree - (resv > 0 ? resv : 0);
	return ret;
}

int zero_hugetlb_reserve(uint64_t page_bytes, long want,
			 struct zero_hugetlb_resv *r)
{
	long nr, avail;
	char path[96];
	int ret, slot;

	r->page_bytes = page_bytes;
	r->slot = -1;
	ret = usable(page_bytes, &nr, &avail);
	if (ret)
		return ret;
	if (avail >= want)
		return 0;
	/*
	 * Raising the count is root's (the file is 0644 root): asked first,
	 * so a user's refusal changes nothing and has nothing to put back.
	 */
	if (faccessat(AT_FDCWD,
		      zero_hugetlb_path(page_bytes, "nr_hugepages", path,
					sizeof(path)),
		      W_OK, AT_EACCESS))
		return -EACCES;
	for (slot = 0; slot < RESV_SLOTS && slots[slot].active; slot++)
		;
	if (slot == RESV_SLOTS)
		return -EBUSY;
	zero_hugetlb_path(page_bytes, "nr_hugepages", slots[slot].path,
			  sizeof(slots[slot].path));
	snprintf(slots[slot].old, sizeof(slots[slot].old), "%ld", nr);
	slots[slot].active = 1;
	r->old_nr = nr;
	r->slot = slot;

	ret = set_nr(page_bytes, nr + (want - avail));
	if (!ret)
		ret = usable(page_bytes, &nr, &avail);
	if (!ret && avail < want) {
		/*
		 * Free memory is often there but fragmented (1 GiB pages
		 * need 1 GiB of contiguous frames): compact once and retry.
		 */
		write_str("/proc/sys/vm/compact_memory", "1");
		ret = set_nr(page_bytes, nr + (want - avail));
		if (!ret)
			ret = usable(page_bytes, &nr, &avail);
	}
	if (ret || avail < want) {
		zero_hugetlb_release(r);
		return ret == -EPERM ? -EACCES : ret ? ret : -ENOMEM;
	}
	return 0;
}

void zero_hugetlb_release(struct zero_hugetlb_resv *r)
{
	int ret;

	if (r->slot < 0)
		return;
	/* Best effort: a failure here leaves pages a user can see. */
	ret = set_nr(r->page_bytes, r->old_nr);
	if (ret)
		pr_warn("could not restore %s to %ld: %s", slots[r->slot].path,
			r->old_nr, strerror(-ret));
	slots[r->slot].active = 0;
	r->slot = -1;
}

void zero_hugetlb_release_all_async(void)
{
	for (int i = 0; i < RESV_SLOTS; i++) {
		if (!slots[i].active)
			continue;
		int fd = open(slots[i].path, O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			if (write(fd, slots[i].old, strlen(slots[i].old)) < 0) {
				/* nothing more a signal handler can do */
			}
			close(fd);
		}
		slots[i].active = 0;
	}
}

int zero_mem_available(uint64_t *bytes)
{
	static const uint64_t sizes[] = { SZ_2M, SZ_1G };
	uint64_t kb = 0;
	long nr, nfree;
	int ret;

	/* A kernel without MemAvailable (before 3.14) counts as none. */
	ret = sysfs_read_field("/proc/meminfo", "MemAvailable", &kb);
	if (ret && ret != -ENODATA)
		return ret;
	*bytes = kb << 10;
	for (unsigned int i = 0; i < 2; i++)
		if (!zero_hugetlb_counts(sizes[i], &nr, &nfree) && nfree > 0)
			*bytes += (uint64_t)nfree * sizes[i];
	return 0;
}
