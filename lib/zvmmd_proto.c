// SPDX-License-Identifier: MIT
/*
 * zvmmd's wire format (zvmmd_proto.h, docs/zvmmd-protocol.md). libc
 * only: the fuzzer links this file alone. Every field is copied out of
 * the buffer with memcpy(), since a record lands wherever the caller's
 * buffer is.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "zvmmd_proto.h"

/* The layouts are the contract: no padding, the same on every ABI. */
_Static_assert(sizeof(struct zvmmd_hdr) == 16, "zvmmd_hdr");
_Static_assert(sizeof(struct zvmmd_lease_req) == 24, "zvmmd_lease_req");
_Static_assert(offsetof(struct zvmmd_lease_req, node) == 16, "node");
_Static_assert(sizeof(struct zvmmd_chunk_ent) == 16, "zvmmd_chunk_ent");
_Static_assert(sizeof(struct zvmmd_lease_rep) == 32, "zvmmd_lease_rep");
_Static_assert(offsetof(struct zvmmd_lease_rep, page_bytes) == 8, "page_bytes");
_Static_assert(sizeof(struct zvmmd_error) == 248, "zvmmd_error");
/* The largest LEASE_OK, 4 KiB with the sizes above, fits in a message. */
_Static_assert(16 + 32 + ZVMMD_MAX_CHUNKS * 16 <= ZVMMD_MSG_MAX, "LEASE_OK");

static int page_size_ok(uint64_t page_bytes)
{
	return page_bytes == 2ull << 20 || page_bytes == 1ull << 30;
}

static int parse_lease(const void *body, struct zvmmd_lease_req *req)
{
	memcpy(req, body, sizeof(*req));
	if (!page_size_ok(req->page_bytes) || !req->bytes ||
	    req->bytes % req->page_bytes || req->node < -1 || req->flags)
		return -EINVAL;
	return 0;
}

static int parse_lease_ok(const void *body, uint32_t len,
			  struct zvmmd_lease_rep *rep)
{
	const unsigned char *p = body;
	uint64_t zero = 0, empty = 0, *sum;
	struct zvmmd_chunk_ent ent;

	if (len < sizeof(*rep))
		return -EPROTO;
	memcpy(rep, p, sizeof(*rep));
	/* Bounded first: n * sizeof(ent) below cannot wrap. */
	if (!rep->nr_chunks || rep->nr_chunks > ZVMMD_MAX_CHUNKS ||
	    len != sizeof(*rep) + rep->nr_chunks * sizeof(ent) ||
	    !page_size_ok(rep->page_bytes))
		return -EPROTO;
	for (uint32_t i = 0; i < rep->nr_chunks; i++) {
		memcpy(&ent, p + sizeof(*rep) + i * sizeof(ent), sizeof(ent));
		if (!ent.bytes || ent.bytes % rep->page_bytes || ent.reserved)
			return -EPROTO;
		if (ent.state == ZVMMD_CHUNK_ZERO)
			sum = &zero;
		else if (ent.state == ZVMMD_CHUNK_EMPTY)
			sum = &empty;
		else
			return -EPROTO;
		if (__builtin_add_overflow(*sum, ent.bytes, sum))
			return -EPROTO;
	}
	/* The totals say what the entries say, so either can be trusted. */
	if (rep->zero_bytes != zero || rep->empty_bytes != empty)
		return -EPROTO;
	return 0;
}

static int parse_error(const void *body, struct zvmmd_error *e)
{
	memcpy(e, body, sizeof(*e));
	if (e->err < 1 || e->err > ZVMMD_ERRNO_MAX || e->reserved ||
	    !memchr(e->msg, '\0', sizeof(e->msg)))
		return -EPROTO;
	return 0;
}

int zvmmd_parse(const void *buf, size_t len, struct zvmmd_msg *m)
{
	const unsigned char *body;
	struct zvmmd_hdr h;
	struct zvmmd_msg out;
	int ret = 0;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != ZVMMD_MAGIC)
		return -EPROTO;
	/* Before the rest: another version may lay out anything after it. */
	if (h.version != ZVMMD_VERSION)
		return -EPROTONOSUPPORT;
	if (len > ZVMMD_MSG_MAX)
		return -EMSGSIZE;
	/* One record is one message: nothing cut off, nothing after it. */
	if (h.reserved || h.len != len - sizeof(h))
		return -EPROTO;

	body = (const unsigned char *)buf + sizeof(h);
	memset(&out, 0, sizeof(out));
	out.type = h.type;
	out.len = h.len;
	out.body = body;
	switch (h.type) {
	case ZVMMD_LEASE:
		if (h.len != sizeof(out.req))
			return -EPROTO;
		ret = parse_lease(body, &out.req);
		break;
	case ZVMMD_STATUS:
		if (h.len)
			return -EPROTO;
		break;
	case ZVMMD_LEASE_OK:
		ret = parse_lease_ok(body, h.len, &out.rep);
		out.chunks = body + sizeof(out.rep);
		break;
	case ZVMMD_STATUS_OK:
		/* JSON text has no NUL: the reader may print it as it is. */
		if (memchr(body, '\0', h.len))
			return -EPROTO;
		break;
	case ZVMMD_ERROR:
		if (h.len != sizeof(out.error))
			return -EPROTO;
		ret = parse_error(body, &out.error);
		break;
	default:
		return -EPROTO;
	}
	if (ret)
		return ret;
	*m = out;
	return 0;
}

int zvmmd_chunk_at(const struct zvmmd_msg *m, unsigned int i,
		   struct zvmmd_chunk_ent *out)
{
	const unsigned char *p = m->chunks;

	if (m->type != ZVMMD_LEASE_OK || !p || i >= m->rep.nr_chunks)
		return -EINVAL;
	memcpy(out, p + (size_t)i * sizeof(*out), sizeof(*out));
	return 0;
}

int zvmmd_build(void *buf, size_t buf_len, uint16_t type, const void *body,
		size_t body_len)
{
	struct zvmmd_hdr h = {
		.magic = ZVMMD_MAGIC,
		.version = ZVMMD_VERSION,
		.type = type,
	};
	unsigned char *p = buf;

	if (buf_len < sizeof(h) || body_len > buf_len - sizeof(h) ||
	    body_len > ZVMMD_MSG_MAX - sizeof(h))
		return -EMSGSIZE;
	h.len = (uint32_t)body_len;
	memcpy(p, &h, sizeof(h));
	/* memmove: the body may already sit where it goes. */
	if (body && body_len)
		memmove(p + sizeof(h), body, body_len);
	return (int)(sizeof(h) + body_len);
}
