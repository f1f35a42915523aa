/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_ZVMMD_PROTO_H
#define ZVMM_LIB_ZVMMD_PROTO_H

#include <stddef.h>
#include <stdint.h>

/*
 * zvmmd's wire format, version 1 (docs/zvmmd-protocol.md): one message
 * per SOCK_SEQPACKET record, native byte order (both ends are on one
 * host), a fixed header then a body of the type's size. Chunk fds travel
 * as SCM_RIGHTS beside a LEASE_OK, one per chunk entry, in order.
 *
 *   client                          zvmmd
 *   LEASE {bytes, page, node}  ->
 *                              <-   LEASE_OK {id, n, ...} + n entries,
 *                                   n fds; or ERROR {errno, message}
 *   (the socket stays open: closing it, or the client's exit, ends
 *    the lease)
 *   STATUS                     ->
 *                              <-   STATUS_OK: JSON text (zvmm pool status)
 */
/*
 * Where zvmmd listens unless its [service] socket says otherwise, and so
 * where its clients look (libzvmm, `zvmm pool status`).
 */
#define ZVMMD_DEFAULT_SOCKET "/run/zvmm/zvmmd.sock"

#define ZVMMD_MAGIC 0x444d565aU /* "ZVMD" */
#define ZVMMD_VERSION 1
/* The kernel passes at most SCM_MAX_FD (253) fds in one message. */
#define ZVMMD_MAX_CHUNKS 253
/* The largest message either side sends or accepts. */
#define ZVMMD_MSG_MAX 65536

enum zvmmd_type {
	ZVMMD_LEASE = 1, /* client: struct zvmmd_lease_req */
	ZVMMD_STATUS = 2, /* client: no body */
	ZVMMD_LEASE_OK = 0x81, /* zvmmd: struct zvmmd_lease_rep, entries */
	ZVMMD_STATUS_OK = 0x82, /* zvmmd: JSON text, not NUL-terminated */
	ZVMMD_ERROR = 0xff, /* zvmmd: struct zvmmd_error */
};

struct zvmmd_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len; /* body bytes after this header */
	uint32_t reserved; /* 0 */
};

struct zvmmd_lease_req {
	uint64_t bytes; /* a multiple of page_bytes */
	uint64_t page_bytes; /* 2 MiB or 1 GiB */
	int32_t node; /* NUMA node, -1: any */
	uint32_t flags; /* 0 */
};

/* What a leased chunk holds when handed out. */
enum zvmmd_chunk_state {
	ZVMMD_CHUNK_ZERO = 1, /* every page allocated and zero (populated) */
	ZVMMD_CHUNK_EMPTY = 2, /* no page allocated: the kernel zeroes each */
};

struct zvmmd_chunk_ent {
	uint64_t bytes; /* the chunk's length; the last may exceed the need */
	uint32_t state; /* enum zvmmd_chunk_state */
	uint32_t reserved; /* 0 */
};

struct zvmmd_lease_rep {
	uint32_t lease_id;
	uint32_t nr_chunks; /* entries after this, fds beside the message */
	uint64_t page_bytes;
	uint64_t zero_bytes; /* in ZERO chunks: populated ahead */
	uint64_t empty_bytes; /* in EMPTY chunks: zeroed at first touch */
};

struct zvmmd_error {
	int32_t err; /* a positive errno */
	uint32_t reserved; /* 0 */
	char msg[240]; /* NUL-terminated: what went wrong and what to do */
};

/* An ERROR's err is a kernel errno: 1 to MAX_ERRNO. */
#define ZVMMD_ERRNO_MAX 4095

/*
 * A message taken apart. The fixed bodies are copied out, aligned and
 * zero for the other types; @body and @chunks point into the buffer
 * given, which need not be aligned, so an entry is read with
 * zvmmd_chunk_at(), never through a cast.
 */
struct zvmmd_msg {
	uint16_t type;
	uint32_t len; /* body bytes */
	const void *body; /* the body in the buffer: STATUS_OK's text */
	struct zvmmd_lease_req req; /* LEASE */
	struct zvmmd_lease_rep rep; /* LEASE_OK */
	struct zvmmd_error error; /* ERROR */
	const void *chunks; /* LEASE_OK: rep.nr_chunks entries, else NULL */
};

/*
 * Checks a received message of @len bytes (one whole record) and fills
 * @m; on an error @m is not written. In order:
 *
 *   -EPROTO           shorter than a header, or another magic;
 *   -EPROTONOSUPPORT  another version (before anything else is read, so
 *                     a later version's message is never called
 *                     malformed: the daemon answers it with ERROR
 *                     EPROTONOSUPPORT in a version-1 header);
 *   -EMSGSIZE         over ZVMMD_MSG_MAX;
 *   -EPROTO           not a well-formed message: header reserved not 0,
 *                     header len not the record's rest, an unknown type,
 *                     a body not exactly the type's size, a reserved
 *                     field not 0; LEASE_OK: page_bytes not 2 MiB or
 *                     1 GiB, 0 or over ZVMMD_MAX_CHUNKS entries, an entry
 *                     of an unknown state or of bytes not a nonzero
 *                     multiple of page_bytes, zero_bytes or empty_bytes
 *                     not the sum of the ZERO or EMPTY entries' bytes;
 *                     ERROR: err not 1 to ZVMMD_ERRNO_MAX, no NUL in
 *                     msg; STATUS_OK: a NUL in the text (JSON has none);
 *   -EINVAL           a well-formed LEASE asking for what version 1
 *                     cannot give: page_bytes not 2 MiB or 1 GiB, bytes
 *                     0 or not a multiple of it, node below -1, flags
 *                     not 0 (the daemon answers with ERROR EINVAL).
 *
 * It takes every type from either side: the caller checks that the type
 * is one it expects.
 */
int zvmmd_parse(const void *buf, size_t len, struct zvmmd_msg *m);

/*
 * Entry @i of a parsed LEASE_OK, copied into @out: 0, or -EINVAL when
 * @m is no LEASE_OK or has no entry @i.
 */
int zvmmd_chunk_at(const struct zvmmd_msg *m, unsigned int i,
		   struct zvmmd_chunk_ent *out);

/*
 * Writes a header of @type and @body_len into @buf (@buf_len bytes), the
 * body after it copied from @body; with @body NULL the caller writes the
 * body (LEASE_OK's reply and entries) at @buf + sizeof(struct zvmmd_hdr),
 * before or after. It checks no field: zvmmd_parse() of the result is
 * the check. The message's length, or -EMSGSIZE when it is over
 * @buf_len or ZVMMD_MSG_MAX.
 */
int zvmmd_build(void *buf, size_t buf_len, uint16_t type, const void *body,
		size_t body_len);

#endif
