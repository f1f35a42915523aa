/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_ZVMMD_STATUS_H
#define ZVMM_LIB_ZVMMD_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

/*
 * STATUS_OK's JSON, read against its schema (docs/zvmmd-protocol.md,
 * "STATUS_OK's members"): whatever answers at the socket wrote it, so
 * every member is checked for its type and range before it is used.
 *
 * Each object of the reply is one table of rows, X(kind, name, lo, hi,
 * what), from which its struct below, the reader, the JSON writer and
 * the documented table all come:
 *
 *   INT     an integer from lo to hi, an int64_t in the struct;
 *   NUMBER  a finite number from lo to hi, a double;
 *   STRING  a string of at most hi bytes with no NUL, a char[hi + 1];
 *   LIST    an array of objects of the table named lo, a
 *           struct zvmmd_status_list.
 *
 * Every row is required, zvmmd sends them all, but for those added since
 * zvmmd 0.1.0 (unseen_bytes, zero_bytes, filling_bytes, leases_total,
 * quarantined_total, reserve_bytes), which a reader takes from what an
 * older zvmmd sent when they are absent (0; clean_bytes, dirty_bytes;
 * the lists' lengths; 0).
 * Members no row names are skipped, as new ones appear without a new
 * protocol version.
 */

/* One object of the reply's leases: a LEASE being served. */
#define ZVMMD_STATUS_LEASE(X)                                           \
	X(INT, id, 0, UINT32_MAX,                                       \
	  "the lease's number, as zvmmd's log names it")                \
	X(INT, pid, 0, INT32_MAX,                                       \
	  "the process that made it (0: one in another pid namespace)") \
	X(STRING, comm, 0, 63, "that process's command name")           \
	X(INT, uid, 0, UINT32_MAX, "that process's user")               \
	X(INT, bytes, 1, INT64_MAX, "the bytes leased")

/* A chunk kept out of the pool after its lease ended: still held. */
#define ZVMMD_STATUS_QUARANTINED(X)                                           \
	X(STRING, chunk, 0, 255, "the chunk's file name in the pool's mount") \
	X(INT, bytes, 1, INT64_MAX, "its length")                             \
	X(INT, holder_pid, -1, INT32_MAX,                                     \
	  "a process that held it at zvmmd's last look (0 or -1: not known)") \
	X(STRING, holder_comm, 0, 63, "that process's command name")

/* A pool: the memory of one page size on one node (zvmmd.conf(5)). */
#define ZVMMD_STATUS_POOL(X)                                                  \
	X(INT, page_bytes, 4096, 1LL << 34, "its page size in bytes")         \
	X(INT, node, -1, 1023, "the NUMA node its chunks are on, -1 for any") \
	X(INT, chunk_bytes, 1, INT64_MAX, "the length of a chunk it makes")   \
	X(INT, clean_bytes, 0, INT64_MAX,                                     \
	  "zero_bytes's older name, kept for one release")                    \
	X(INT, dirty_bytes, 0, INT64_MAX,                                     \
	  "filling_bytes's older name, kept for one release")                 \
	X(INT, zero_bytes, 0, INT64_MAX, "zeroed ahead, ready to lease")      \
	X(INT, filling_bytes, 0, INT64_MAX,                                   \
	  "being filled now: zeroed by zvmmd, no one's data")                 \
	X(INT, leased_bytes, 0, INT64_MAX, "in leases")                       \
	X(INT, quarantined_bytes, 0, INT64_MAX,                               \
	  "in chunks kept out after their lease (quarantined below)")         \
	X(INT, unseen_bytes, 0, INT64_MAX,                                    \
	  "held in its mount beyond all of the above, by what no scan sees")  \
	X(INT, low_bytes, 0, INT64_MAX,                                       \
	  "its low: refilled when clean is below")                            \
	X(INT, high_bytes, 0, INT64_MAX, "its high: refilled up to it")       \
	X(INT, max_bytes, 0, INT64_MAX, "its max: all it may hold")           \
	X(INT, reserve_bytes, 0, INT64_MAX,                                   \
	  "of max, what the kernel holds for root's leases alone "            \
	  "([service] root_reserve)")                                         \
	X(INT, scrubbed_bytes, 0, INT64_MAX, "zeroed since zvmmd started")    \
	X(NUMBER, scrub_gbps, 0, 1e6, "its fill rate so far, GB/s (1e9 B/s)") \
	X(INT, leases_total, 0, INT64_MAX,                                    \
	  "its leases, all of them: more than listed below when some are "    \
	  "another user's or past the most listed")                           \
	X(INT, quarantined_total, 0, INT64_MAX,                               \
	  "its quarantined chunks, all of them, likewise")                    \
	X(LIST, leases, lease, 0,                                             \
	  "its leases: all of them for root, the asker's own for any other "  \
	  "user; at most 64 in the whole reply")                              \
	X(LIST, quarantined, quarantined, 0,                                  \
	  "its quarantined chunks, shown as its leases are")

/* The reply: one JSON object. */
#define ZVMMD_STATUS_TOP(X)                             \
	X(STRING, version, 0, 63, "zvmmd's version")    \
	X(INT, pid, 1, INT32_MAX, "zvmmd's process id") \
	X(LIST, pools, pool, 0, "one per pool zvmmd keeps")

/* A LIST member: @nr objects of its table's struct at @v. */
struct zvmmd_status_list {
	void *v;
	size_t nr;
};

#define ZVMMD_STATUS_FIELD(kind, name, lo, hi, what) \
	ZVMMD_STATUS_FIELD_##kind(name, hi)
#define ZVMMD_STATUS_FIELD_INT(name, hi) int64_t name;
#define ZVMMD_STATUS_FIELD_NUMBER(name, hi) double name;
#define ZVMMD_STATUS_FIELD_STRING(name, hi) char name[(hi) + 1];
#define ZVMMD_STATUS_FIELD_LIST(name, hi) struct zvmmd_status_list name;

struct zvmmd_status_lease {
	ZVMMD_STATUS_LEASE(ZVMMD_STATUS_FIELD)
};

struct zvmmd_status_quarantined {
	ZVMMD_STATUS_QUARANTINED(ZVMMD_STATUS_FIELD)
};

struct zvmmd_status_pool {
	ZVMMD_STATUS_POOL(ZVMMD_STATUS_FIELD)
};

struct zvmmd_status {
	ZVMMD_STATUS_TOP(ZVMMD_STATUS_FIELD)
};

/* The tables, for the reader and writer and for checks of the docs. */
enum zvmmd_status_kind {
	ZVMMD_STATUS_INT,
	ZVMMD_STATUS_NUMBER,
	ZVMMD_STATUS_STRING,
	ZVMMD_STATUS_LIST,
};

struct zvmmd_status_object;

struct zvmmd_status_row {
	const char *name;
	enum zvmmd_status_kind kind;
	size_t off; /* of the member in its object's struct */
	int64_t lo, hi; /* INT: the range; STRING: hi, the most bytes */
	double dlo, dhi; /* NUMBER: the range */
	const struct zvmmd_status_object *list; /* LIST: its objects */
	const char *what;
};

struct zvmmd_status_object {
	const char *name; /* "pool", for people */
	size_t size; /* of its struct */
	const struct zvmmd_status_row *rows;
	unsigned int nr;
};

/* The reply's table; LIST rows lead to the others. */
extern const struct zvmmd_status_object zvmmd_status_schema;

/*
 * Whether member @name of @t's objects was added since zvmmd 0.1.0: a
 * reply without it is read, the member then taken from what an older
 * zvmmd sent (see above).
 */
bool zvmmd_status_added(const struct zvmmd_status_object *t, const char *name);

/*
 * Reads the @len bytes of STATUS_OK text at @text (no NUL needed) into
 * @s, which zvmmd_status_free() empties again, also after an error.
 * Returns 0; -EPROTO when the text is not one JSON object (strict JSON;
 * strings are taken as bytes, UTF-8 or not) that holds every row of the
 * schema with its type and range,
 * @err then saying which member as a path ("pools[1].node: ..."); or
 * -ENOMEM.
 */
int zvmmd_status_parse(const char *text, size_t len, struct zvmmd_status *s,
		       char *err, size_t err_len)
	__attribute__((warn_unused_result));

/* Frees what zvmmd_status_parse() allocated in @s. */
void zvmmd_status_free(struct zvmmd_status *s);

/*
 * @s as JSON text, every row in the schema's order, in *@out (free()
 * it): what zvmmd_status_parse() reads back as @s. Returns 0 or -ENOMEM.
 */
int zvmmd_status_json(const struct zvmmd_status *s, char **out)
	__attribute__((warn_unused_result));

/*
 * STATUS_OK's JSON Schema (draft 2020-12) from the same rows: what
 * docs/zvmmd-status.schema.json holds (`make schema`). A new reference;
 * json_object_put() it.
 */
json_object *zvmmd_status_json_schema(void);

/*
 * The table `zvmm pool status` prints: a line for zvmmd, a header, then
 * a row per pool (page size, node, chunk, zero, filling, leased and
 * quarantined bytes, fill rate), each followed by what its mount holds
 * unseen, its leases and quarantined chunks. Names are shown with every byte that is not
 * printable ASCII as '?'.
 */
void zvmmd_status_print(const struct zvmmd_status *s, FILE *f);

#endif
