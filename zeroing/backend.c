// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../arch/generic/clear.h"
#include "backend.h"

#define ZERO_MAX_BACKENDS 16

static struct zero_backend registry[ZERO_MAX_BACKENDS];
static unsigned int registry_len;
static uint32_t cpu_features;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void add(const struct arch_backend *ab, bool generic)
{
	struct zero_backend *b = &registry[registry_len++];

	b->name = ab->name;
	b->clear = ab->clear;
	b->needs = ab->needs;
	b->what = ab->what;
	b->generic = generic;
}

static void registry_init(void)
{
	unsigned int i;

	for (i = 0; i < arch_nr_backends; i++)
		add(&arch_backends[i], false);
	for (i = 0; i < generic_nr_backends; i++)
		add(&generic_backends[i], true);
	cpu_features = arch_cpu_features();
}

unsigned int zero_backend_count(void)
{
	pthread_once(&registry_once, registry_init);
	return registry_len;
}

const struct zero_backend *zero_backend_at(unsigned int i)
{
	pthread_once(&registry_once, registry_init);
	return i < registry_len ? &registry[i] : NULL;
}

uint32_t zero_cpu_features(void)
{
	pthread_once(&registry_once, registry_init);
	return cpu_features;
}

bool zero_backend_runs_with(const struct zero_backend *b, uint32_t features)
{
	return (b->needs & features) == b->needs;
}

bool zero_backend_runs_here(const struct zero_backend *b)
{
	return zero_backend_runs_with(b, zero_cpu_features());
}

void zero_backend_list(uint32_t features, const char *sep, char *buf,
		       size_t len)
{
	const struct zero_backend *b;
	unsigned int i;
	size_t n = 0;

	buf[0] = '\0';
	for_each_backend(i, b) {
		if (!zero_backend_runs_with(b, features))
			continue;
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s",
				      n ? sep : "", b->name);
	}
}

int zero_backend_index(const char *name)
{
	const struct zero_backend *b;
	unsigned int i;

	for_each_backend(i, b)
		if (!strcmp(b->name, name))
			return (int)i;
	return -1;
}

void zero_features_format(uint32_t features, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < ARCH_NR_FEATURES; i++) {
		if (!(features & (1u << i)))
			continue;
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s",
				      n ? " " : "", arch_feature_names[i]);
	}
	if (!n)
		snprintf(buf, len, "none");
}

int zero_backend_lookup(const char *name, uint32_t features,
			const struct zero_backend **out, char *why,
			size_t why_len)
{
	const struct zero_backend_name *known;
	const struct zero_backend *b;
	char avail[256], missing[128];
	int i = zero_backend_index(name);

	zero_backend_list(features, ", ", avail, sizeof(avail));
	if (i >= 0) {
		b = zero_backend_at((unsigned int)i);
		if (zero_backend_runs_with(b, features)) {
			*out = b;
			return 0;
		}
		zero_features_format(b->needs & ~features, missing,
				     sizeof(missing));
		if (why)
			snprintf(
				why, why_len,
				"backend '%s' needs the CPU feature '%s', which this CPU does not report; backends that run here: %s",
				name, missing, avail);
		return -EOPNOTSUPP;
	}
	/* Not built here: one of another architecture, or unknown. */
	for (i = 0; (known = zero_backend_name_at((unsigned int)i)); i++) {
		if (strcmp(known->name, name))
			continue;
		if (why)
			snprintf(
				why, why_len,
				"backend '%s' is for %s, this is %s; backends that run here: %s",
				name, known->arch, arch_name, avail);
		return -EOPNOTSUPP;
	}
	if (why)
		snprintf(why, why_len,
			 "unknown backend '%s'; backends that run here: %s",
			 name, avail);
	return -ENOENT;
}

int zero_backend_find(const char *name, const struct zero_backend **out,
		      char *why, size_t why_len)
{
	return zero_backend_lookup(name, zero_cpu_features(), out, why,
				   why_len);
}
