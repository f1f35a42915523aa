// SPDX-License-Identifier: MIT
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "../api/stats.h"
#include "report.h"

/*
 * The report is built as json-c objects and written by json-c (values,
 * escaping, nesting) in the layout it has always had, which scripts read
 * with grep (bench/suite.sh, demand.sh, launch.sh): "key": value with one
 * space after the colon, one line per section, the top level's scalars
 * on the lines they share. Numbers with a fraction are written
 * fixed-point with each field's precision, never with an exponent.
 */
#define REPORT_JSON_FLAGS \
	(JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Whether every json-c allocation of the report succeeded. */
struct jb {
	bool ok;
};

/*
 * @v as member @key of @o (taking @v); a NULL @o or @v (an allocation that
 * failed, here or before) is a failure.
 */
static json_object *jb_add(struct jb *b, json_object *o, const char *key,
			   json_object *v)
{
	if (!o || !v || json_object_object_add(o, key, v)) {
		json_object_put(v);
		b->ok = false;
		return NULL;
	}
	return v;
}

static json_object *jb_section(struct jb *b, json_object *o, const char *key)
{
	return jb_add(b, o, key, json_object_new_object());
}

static void jb_u64(struct jb *b, json_object *o, const char *key, uint64_t v)
{
	jb_add(b, o, key, json_object_new_uint64(v));
}

static void jb_i64(struct jb *b, json_object *o, const char *key, int64_t v)
{
	jb_add(b, o, key, json_object_new_int64(v));
}

static void jb_bool(struct jb *b, json_object *o, const char *key, bool v)
{
	jb_add(b, o, key, json_object_new_boolean(v));
}

/*
 * @v with @prec decimals ("%.3f"): json-c writes the text it is given.
 * NaN and infinities, which JSON has no numbers for, are null.
 */
static void jb_fixed(struct jb *b, json_object *o, const char *key, double v,
		     int prec)
{
	char text[400]; /* %.6f of DBL_MAX: 317 characters */

	if (!isfinite(v)) {
		if (!o || json_object_object_add(o, key, NULL))
			b->ok = false;
		return;
	}
	snprintf(text, sizeof(text), "%.*f", prec, v);
	jb_add(b, o, key, json_object_new_double_s(v, text));
}

/*
 * @root as text: "{ " the members ", "-separated, each written by json-c,
 * with a line break before and after each section (an object), " }".
 * The keys are this file's own, which need no escaping. Every member is
 * written once before anything is printed, so a failure prints nothing;
 * the second time json-c reuses the buffer it filled.
 */
static int jb_write(FILE *f, json_object *root)
{
	struct json_object_iter it;
	bool prev_obj = false;
	const char *sep = "{ ";

	json_object_object_foreachC(root, it)
	{
		if (!json_object_to_json_string_ext(it.val, REPORT_JSON_FLAGS))
			return -ENOMEM;
	}
	json_object_object_foreachC(root, it)
	{
		bool obj = json_object_is_type(it.val, json_type_object);

		if (obj || prev_obj)
			sep = ",\n  ";
		fprintf(f, "%s\"%s\": %s", sep, it.key,
			json_object_to_json_string_ext(it.val,
						       REPORT_JSON_FLAGS));
		sep = ", ";
		prev_obj = obj;
	}
	fputs(" }\n", f);
	return 0;
}

void vmm_report_json(FILE *f, const struct vmm_run_facts *r)
{
	const struct zvmm_stats *z = &r->z;
	const struct vmm_devices *dev = r->dev;
	static const char *const keys[] = { "touched_bytes",  "verified_bytes",
					    "nonzero_bytes",  "stride",
					    "reserved_bytes", "tsc_cycles",
					    "marks_written",  "marks_lost",
					    "foreign_words" };
	struct jb b = { .ok = true };
	json_object *root = json_object_new_object();
	json_object *o, *p;
	struct rusage ru;
	uint64_t v;

	jb_u64(&b, root, "version", 1);
	jb_u64(&b, root, "vcpus", r->vcpus);
	o = jb_section(&b, root, "launch");
	jb_fixed(&b, o, "ready_ms", r->ready_ms, 3);
	p = jb_section(&b, o, "phases_ms");
	jb_fixed(&b, p, "options", r->options_ms, 3);
	jb_fixed(&b, p, "prepare", r->prepare_ms, 3);
	jb_fixed(&b, p, "kvm_vm", r->kvm_vm_ms, 3);
	jb_fixed(&b, p, "kvm_memslots", r->kvm_memslots_ms, 3);
	jb_fixed(&b, p, "kvm_vcpus", r->kvm_vcpus_ms, 3);
	jb_fixed(&b, p, "loader", r->loader_ms, 3);
	jb_fixed(&b, p, "start", r->start_ms, 3);
	/*
	 * Everything libzvmm reports comes from its one table (api/stats.h):
	 * the same keys, nesting and types as zvmm_guest_stats_json().
	 */
	if (b.ok && api_stats_json(z, root))
		b.ok = false;

	/* The guest's own numbers, copied by name from its report. */
	o = jb_section(&b, root, "guest");
	jb_i64(&b, o, "exit_code", r->exit_code);
	jb_bool(&b, o, "report", dev->have_report);
	for (unsigned int i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (dev->have_report &&
		    !vmm_report_u64(dev->report, keys[i], &v))
			jb_u64(&b, o, keys[i], v);
	if (dev->have_report && dev->touch_start)
		jb_fixed(&b, o, "touch_ms",
			 (dev->report_time - dev->touch_start) * 1e3, 3);
	if (dev->have_report)
		jb_fixed(&b, o, "report_ms",
			 (dev->report_time - r->start) * 1e3, 3);

	o = jb_section(&b, root, "io");
	jb_u64(&b, o, "other_pio", dev->other_pio);
	jb_u64(&b, o, "mmio", r->mmio_exits);

	/*
	 * zvmm's own footprint: hugetlb pages are not in the RSS counters,
	 * so max RSS is zvmm apart from guest memory (issue 6's overhead
	 * target is measured from it).
	 */
	if (getrusage(RUSAGE_SELF, &ru))
		memset(&ru, 0, sizeof(ru));
	o = jb_section(&b, root, "process");
	jb_i64(&b, o, "max_rss_kib", ru.ru_maxrss);
	jb_fixed(&b, o, "user_s",
		 ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, 3);
	jb_fixed(&b, o, "sys_s", ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
		 3);

	jb_fixed(&b, root, "total_ms", r->total_ms, 3);

	if (!b.ok || jb_write(f, root))
		pr_err("out of memory writing the JSON report");
	json_object_put(root);
	fflush(f);
}

void vmm_report_summary(FILE *f, const struct vmm_run_facts *r)
{
	const struct zvmm_stats *z = &r->z;
	uint64_t touched = 0, nonzero = 0, verified = 0;
	char a[32], b[32];

	if (r->dev->have_report) {
		(void)!vmm_report_u64(r->dev->report, "touched_bytes",
				      &touched);
		(void)!vmm_report_u64(r->dev->report, "verified_bytes",
				      &verified);
		(void)!vmm_report_u64(r->dev->report, "nonzero_bytes",
				      &nonzero);
	}
	fprintf(f,
		"zvmm: %s on %s pages, %u vCPU%s, policy %s (backend %s, %u workers): ready in %.1f ms (prezero %.1f ms, %.1f GB/s)\n",
		size_format(z->bytes, a, sizeof(a)),
		size_label(z->page_bytes, b, sizeof(b)), r->vcpus,
		r->vcpus == 1 ? "" : "s", z->mode, z->backend, z->workers,
		r->ready_ms, z->prezero_seconds * 1e3, z->prezero_gbps);
	if (z->service_zero_bytes || z->service_empty_bytes)
		fprintf(f, "zvmm: zvmmd leased %s zeroed ahead%s%s%s\n",
			size_human(z->service_zero_bytes, a, sizeof(a)),
			z->service_empty_bytes ? " and " : "",
			z->service_empty_bytes ?
				size_human(z->service_empty_bytes, b,
					   sizeof(b)) :
				"",
			z->service_empty_bytes ?
				" it had no zero chunks for (the kernel zeroes those at first touch)" :
				"");
	if (r->dev->have_report)
		fprintf(f,
			"zvmm: guest touched %s, verified %llu bytes, %llu non-zero; touch took %.1f ms; exit code %d\n",
			size_human(touched, a, sizeof(a)),
			(unsigned long long)verified,
			(unsigned long long)nonzero,
			(r->dev->report_time - r->dev->touch_start) * 1e3,
			r->exit_code);
	else
		fprintf(f, "zvmm: guest exit code %d (no ZVMM-REPORT line)\n",
			r->exit_code);
}

void vmm_report_phases(FILE *f, const struct vmm_run_facts *r)
{
	const struct zvmm_stats *z = &r->z;

	fprintf(f,
		"zvmm: launch phases (ms): options %.2f, memory %.2f, record %.2f, engine %.2f, prepare %.2f, kvm vm %.2f, kvm memslots %.2f, kvm vcpus %.2f, loader %.2f, start %.2f: ready %.2f\n",
		r->options_ms, z->open_memory_ms, z->open_record_ms,
		z->open_engine_ms, r->prepare_ms, r->kvm_vm_ms,
		r->kvm_memslots_ms, r->kvm_vcpus_ms, r->loader_ms, r->start_ms,
		r->ready_ms);
}
