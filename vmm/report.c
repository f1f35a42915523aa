// SPDX-License-Identifier: MIT
#include <string.h>
#include <sys/resource.h>

#include "../lib/size.h"
#include "report.h"

void vmm_report_json(FILE *f, const struct vmm_run_facts *r)
{
	const struct zvmm_stats *z = &r->z;
	const char *rep = r->dev->have_report ? r->dev->report : "";
	static const char *const keys[] = { "touched_bytes",  "verified_bytes",
					    "nonzero_bytes",  "stride",
					    "reserved_bytes", "tsc_cycles",
					    "marks_written",  "marks_lost",
					    "foreign_words" };
	struct rusage ru;
	uint64_t v;

	fprintf(f,
		"{ \"version\": 1, \"mem_bytes\": %llu, \"page_bytes\": %llu, \"vcpus\": %u,\n"
		"  \"policy\": { \"mode\": \"%s\", \"backend\": \"%s\", \"backend_from\": \"%s\", \"workers\": %u, \"chunk_bytes\": %llu },\n"
		"  \"launch\": { \"ready_ms\": %.3f, \"phases_ms\": { \"options\": %.3f, \"memory\": %.3f, \"record\": %.3f, \"engine\": %.3f, \"prepare\": %.3f, \"kvm_vm\": %.3f, \"kvm_memslots\": %.3f, \"kvm_vcpus\": %.3f, \"loader\": %.3f, \"start\": %.3f } },\n"
		"  \"prezero\": { \"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.3f, \"scrub_bytes\": %llu, \"populate_bytes\": %llu },\n"
		"  \"demand\": { \"faults\": %llu, \"pages\": %llu, \"scrubbed_pages\": %llu, \"ahead_pages\": %llu, \"bytes\": %llu, \"latency_us\": { \"p50\": %.1f, \"p99\": %.1f, \"max\": %.1f }, \"busy_latency_us\": { \"faults\": %llu, \"p50\": %.1f, \"p99\": %.1f, \"max\": %.1f } },\n"
		"  \"background\": { \"bytes\": %llu, \"seconds\": %.6f },\n"
		"  \"pool\": { \"file\": %s, \"record_clean\": %s, \"on_exit\": \"%s\", \"on_exit_bytes\": %llu, \"on_exit_seconds\": %.6f, \"record_written\": %s },\n"
		"  \"guest\": { \"exit_code\": %d, \"report\": %s",
		(unsigned long long)z->bytes, (unsigned long long)z->page_bytes,
		r->vcpus, z->mode, z->backend, z->backend_from, z->workers,
		(unsigned long long)z->chunk_bytes, r->ready_ms, r->options_ms,
		z->open_memory_ms, z->open_record_ms, z->open_engine_ms,
		r->prepare_ms, r->kvm_vm_ms, r->kvm_memslots_ms,
		r->kvm_vcpus_ms, r->loader_ms, r->start_ms,
		(unsigned long long)(z->prezero_scrub_bytes +
				     z->prezero_populate_bytes),
		z->prezero_seconds, z->prezero_gbps,
		(unsigned long long)z->prezero_scrub_bytes,
		(unsigned long long)z->prezero_populate_bytes,
		(unsigned long long)z->faults,
		(unsigned long long)z->fault_pages,
		(unsigned long long)z->fault_scrubbed_pages,
		(unsigned long long)z->ahead_pages,
		(unsigned long long)z->fault_bytes, z->fault_p50_us,
		z->fault_p99_us, z->fault_max_us,
		(unsigned long long)z->busy_faults, z->busy_p50_us,
		z->busy_p99_us, z->busy_max_us,
		(unsigned long long)z->background_bytes, z->background_seconds,
		z->pool ? "true" : "false", z->record_clean ? "true" : "false",
		z->on_exit[0] ? z->on_exit : "none",
		(unsigned long long)z->exit_bytes, z->exit_seconds,
		z->record_written ? "true" : "false", r->exit_code,
		r->dev->have_report ? "true" : "false");
	for (unsigned int i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!vmm_report_u64(rep, keys[i], &v))
			fprintf(f, ", \"%s\": %llu", keys[i],
				(unsigned long long)v);
	if (r->dev->have_report && r->dev->touch_start)
		fprintf(f, ", \"touch_ms\": %.3f",
			(r->dev->report_time - r->dev->touch_start) * 1e3);
	if (r->dev->have_report)
		fprintf(f, ", \"report_ms\": %.3f",
			(r->dev->report_time - r->start) * 1e3);
	/*
	 * zvmm's own footprint: hugetlb pages are not in the RSS counters,
	 * so max RSS is zvmm apart from guest memory (issue 6's overhead
	 * target is measured from it).
	 */
	if (getrusage(RUSAGE_SELF, &ru))
		memset(&ru, 0, sizeof(ru));
	fprintf(f,
		" },\n  \"io\": { \"other_pio\": %llu, \"mmio\": %llu },\n"
		"  \"process\": { \"max_rss_kib\": %ld, \"user_s\": %.3f, \"sys_s\": %.3f },\n"
		"  \"total_ms\": %.3f }\n",
		(unsigned long long)r->dev->other_pio,
		(unsigned long long)r->mmio_exits, ru.ru_maxrss,
		ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, r->total_ms);
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
