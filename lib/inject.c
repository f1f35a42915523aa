// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "log.h"

static const struct {
	const char *name;
	int err;
} points[] = {
	{ "memfd", ENOMEM },	 { "mmap", ENOMEM }, { "populate", ENOMEM },
	{ "fallocate", ENOSPC }, { "uffd", EPERM },  { "uffd-dev", EACCES },
	{ "worker", EAGAIN },	 { "vcpu", EAGAIN }, { "continue", EFAULT },
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int chosen = -1; /* index in points[], -1: none */
static unsigned long nth = 1;
static unsigned long calls;

static void parse(void)
{
	const char *v = secure_getenv("ZVMM_INJECT");
	const char *colon;
	size_t len;

	if (!v || !*v)
		return;
	colon = strchr(v, ':');
	len = colon ? (size_t)(colon - v) : strlen(v);
	for (unsigned int i = 0; i < sizeof(points) / sizeof(points[0]); i++)
		if (strlen(points[i].name) == len &&
		    !strncmp(points[i].name, v, len))
			chosen = (int)i;
	if (colon) {
		char *end;

		nth = strtoul(colon + 1, &end, 10);
		if (*end || !nth)
			chosen = -1;
	}
	if (chosen < 0)
		pr_warn("ZVMM_INJECT='%s' names no injection point; ignored",
			v);
}

void zvmm_inject_from_env(void)
{
	pthread_once(&once, parse);
}

int zvmm_inject(const char *point)
{
	int c;

	c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
	if (c < 0 || strcmp(points[c].name, point))
		return 0;
	if (__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) !=
	    __atomic_load_n(&nth, __ATOMIC_RELAXED))
		return 0;
	return points[c].err;
}

void zvmm_inject_arm(const char *point, unsigned long n)
{
	int c = -1;

	for (unsigned int i = 0;
	     point && i < sizeof(points) / sizeof(points[0]); i++)
		if (!strcmp(points[i].name, point))
			c = (int)i;
	__atomic_store_n(&nth, n ? n : 1, __ATOMIC_RELAXED);
	__atomic_store_n(&calls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&chosen, c, __ATOMIC_RELEASE);
}
