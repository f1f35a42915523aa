// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../lib/inject.h"
#include "../lib/sysfs.h"
#include "uffd.h"

#define UFFD_DEV "/dev/userfaultfd"
#define UFFD_SYSCTL "/proc/sys/vm/unprivileged_userfaultfd"

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

static int open_dev(int flags)
{
	int dev, fd, ret = zvmm_inject("uffd-dev");

	if (ret)
		return -ret;
	dev = open(UFFD_DEV, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
	ret = fd < 0 ? -errno : fd;
	close(dev);
	return ret;
}

static int open_syscall(int flags)
{
	int fd;

#ifdef SYS_userfaultfd
	fd = (int)syscall(SYS_userfaultfd, flags);
	return fd < 0 ? -errno : fd;
#else
	(void)fd;
	(void)flags;
	return -ENOSYS;
#endif
}

/*
 * The first way out, as this system offers it: the device with its group
 * and mode, or that there is none (then only the sysctl is left).
 */
static void describe_dev(int dev_err, char *buf, size_t len)
{
	struct group *g;
	struct stat st;
	char gname[32];

	if (stat(UFFD_DEV, &st)) {
		buf[0] = '\0';
		return;
	}
	g = getgrgid(st.st_gid);
	if (g)
		snprintf(gname, sizeof(gname), "%s", g->gr_name);
	else
		snprintf(gname, sizeof(gname), "%u", (unsigned int)st.st_gid);
	if (dev_err == ENOTTY)
		snprintf(
			buf, len,
			UFFD_DEV
			" (this system has it, but USERFAULTFD_IOC_NEW failed); or ");
	else if (!st.st_gid || (st.st_mode & 060) != 060)
		/* Joining root's group is no way out: name the rule. */
		snprintf(
			buf, len,
			"read-write access to " UFFD_DEV
			", which this system has for root alone (group %s, mode %04o): give a group of users access with the udev rule of zvmm(1) \"Running as a user\" and join it; or ",
			gname, (unsigned int)(st.st_mode & 07777));
	else
		snprintf(
			buf, len,
			"read-write access to " UFFD_DEV
			", which this system offers to group %s (mode %04o): add this user to group %s; or ",
			gname, (unsigned int)(st.st_mode & 07777), gname);
}

int zero_uffd_open(int flags, const char **via, char *err, size_t len)
{
	int refused = zvmm_inject("uffd");
	char dev_how[512], sysctl[16] = "unreadable";
	const char *absent = "";
	int dev_fd, sys_fd;
	long v;

	dev_fd = refused ? -EACCES : open_dev(flags);
	if (dev_fd >= 0) {
		*via = UFFD_DEV;
		return dev_fd;
	}
	sys_fd = refused ? -refused : open_syscall(flags);
	if (sys_fd >= 0) {
		*via = "userfaultfd(2)";
		return sys_fd;
	}
	describe_dev(-dev_fd, dev_how, sizeof(dev_how));
	if (!dev_how[0])
		absent = ", the one way this system offers: it has no " UFFD_DEV
			 " (Linux 6.1+ with CONFIG_USERFAULTFD)";
	if (!sysfs_read_long(UFFD_SYSCTL, &v))
		snprintf(sysctl, sizeof(sysctl), "%ld", v);
	snprintf(
		err, len,
		"userfaultfd refused (" UFFD_DEV
		": %s; userfaultfd(2): %s): demand and hybrid zeroing need %ssysctl vm.unprivileged_userfaultfd=1 (now %s; lets every process on the host handle kernel faults)%s; or root. Or use the prezero policy",
		strerror(-dev_fd), strerror(-sys_fd), dev_how, sysctl, absent);
	return sys_fd == -ENOSYS ? -ENOSYS : -EPERM;
}
