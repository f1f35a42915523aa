/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_API_STATS_H
#define ZVMM_API_STATS_H

#include <json-c/json.h>

#include "../include/zvmm/zvmm.h"

/*
 * struct zvmm_stats as JSON, one row per key: zvmm_guest_stats_json(),
 * the same sections of `zvmm run --json` and docs/stats.schema.json all
 * come from this table (tests/test_schema.c holds the committed schema to
 * it and validates every JSON output against the schema).
 *
 * ZVMM_STATS_ROWS(X): X(section, key, type, value, description), where
 * section is a dotted path of objects ("" for the top), value an
 * expression of `s` (const struct zvmm_stats *), and type one of
 *   STR   a string          U64   an unsigned integer
 *   BOOL  a boolean         MS, S, GBPS, US  a number, printed with
 *                                   3, 6, 3 and 1 decimals
 */
#define ZVMM_STATS_ROWS(X)                                                        \
	X("", "mem_bytes", U64, s->bytes, "guest memory, bytes")                  \
	X("", "page_bytes", U64, s->page_bytes, "hugepage size, bytes")           \
	X("policy", "mode", STR, s->mode, "prezero, demand or hybrid")            \
	X("policy", "backend", STR, s->backend,                                   \
	  "the clearing backend; none when no page needed one")                   \
	X("policy", "backend_from", STR, s->backend_from,                         \
	  "where it came from: policy, profile, measured or none")                \
	X("policy", "workers", U64, s->workers, "worker threads")                 \
	X("policy", "chunk_bytes", U64, s->chunk_bytes,                           \
	  "bytes a worker clears between two yields")                             \
	X("", "pages", U64, s->pages, "pages of guest memory")                    \
	X("", "zero_pages", U64, s->zero_pages,                                   \
	  "pages zero now, mapped or not")                                        \
	X("", "dirty_pages", U64, s->dirty_pages,                                 \
	  "pages holding someone's data now (the guest's included)")              \
	X("launch", "open_ms", MS, s->open_ms, "zvmm_guest_open(), all of it")    \
	X("launch.phases_ms", "memory", MS, s->open_memory_ms,                    \
	  "open: checking, locking, mapping and classifying the memory")          \
	X("launch.phases_ms", "record", MS, s->open_record_ms,                    \
	  "open: the pool's state record and its samples")                        \
	X("launch.phases_ms", "engine", MS, s->open_engine_ms,                    \
	  "open: the backend's choice and the workers")                           \
	X("prezero", "bytes", U64,                                                \
	  s->prezero_scrub_bytes + s->prezero_populate_bytes,                     \
	  "bytes made zero by the prezero pass (policy or zvmm_guest_prezero())") \
	X("prezero", "seconds", S, s->prezero_seconds, "its wall time")           \
	X("prezero", "gbps", GBPS, s->prezero_gbps,                               \
	  "its rate, 1e9 bytes per second")                                       \
	X("prezero", "scrub_bytes", U64, s->prezero_scrub_bytes,                  \
	  "of those, cleared with the backend (someone's data)")                  \
	X("prezero", "populate_bytes", U64, s->prezero_populate_bytes,            \
	  "of those, holes the kernel zeroed as a worker populated them")         \
	X("demand", "faults", U64, s->faults, "fault messages read")              \
	X("demand", "pages", U64, s->fault_pages, "pages mapped for a fault")     \
	X("demand", "scrubbed_pages", U64, s->fault_scrubbed_pages,               \
	  "of those, cleared by a worker first (someone's data)")                 \
	X("demand", "populated_pages", U64, s->fault_populated_pages,             \
	  "of those, holes populated first (the kernel zeroed them)")             \
	X("demand", "ahead_pages", U64, s->ahead_pages,                           \
	  "hybrid: pages mapped as the background finished them, no fault")       \
	X("demand", "bytes", U64, s->fault_bytes,                                 \
	  "bytes cleared by workers for faults (the scrubbed pages)")             \
	X("demand", "populate_bytes", U64, s->fault_populate_bytes,               \
	  "bytes of holes populated for faults")                                  \
	X("demand.latency_us", "p50", US, s->fault_p50_us,                        \
	  "fault read to mapped, median, microseconds")                           \
	X("demand.latency_us", "p99", US, s->fault_p99_us, "99th percentile")     \
	X("demand.latency_us", "max", US, s->fault_max_us, "the longest")         \
	X("demand.busy_latency_us", "faults", U64, s->busy_faults,                \
	  "faults that waited behind background work")                            \
	X("demand.busy_latency_us", "p50", US, s->busy_p50_us,                    \
	  "their latency, median, microseconds")                                  \
	X("demand.busy_latency_us", "p99", US, s->busy_p99_us,                    \
	  "99th percentile")                                                      \
	X("demand.busy_latency_us", "max", US, s->busy_max_us, "the longest")     \
	X("background", "bytes", U64, s->background_bytes,                        \
	  "hybrid: bytes made zero in the background")                            \
	X("background", "seconds", S, s->background_seconds,                      \
	  "from start to the end of its pass, or to now")                         \
	X("background", "active", BOOL, s->background_active,                     \
	  "a background pass is running")                                         \
	X("pool", "file", BOOL, s->pool, "the memory is a named pool file")       \
	X("pool", "record_clean", BOOL, s->record_clean,                          \
	  "its state record vouched for its zero pages at open")                  \
	X("pool", "on_exit", STR, s->on_exit[0] ? s->on_exit : "none",            \
	  "what on_exit did: release, keep, scrub, or none before exit")          \
	X("pool", "on_exit_bytes", U64, s->exit_bytes,                            \
	  "bytes on_exit made zero")                                              \
	X("pool", "on_exit_seconds", S, s->exit_seconds, "its wall time")         \
	X("pool", "record_written", BOOL, s->record_written,                      \
	  "a state record now vouches for the pool")                              \
	X("pool", "foreign_pages", U64, s->foreign_pages,                         \
	  "pages another process allocated behind zvmm's back, found")            \
	X("service", "zero_bytes", U64, s->service_zero_bytes,                    \
	  "leased from zvmmd already zero (0: not leased)")                       \
	X("service", "empty_bytes", U64, s->service_empty_bytes,                  \
	  "leased from zvmmd as holes the kernel zeroes at first touch")

/*
 * Adds every row of @s to @root (creating the sections it needs, or
 * adding to those there). 0, or -ENOMEM.
 */
int api_stats_json(const struct zvmm_stats *s, json_object *root);

/* The JSON Schema (draft 2020-12) of the rows, as docs/ holds it. */
json_object *api_stats_schema(void);

#endif
