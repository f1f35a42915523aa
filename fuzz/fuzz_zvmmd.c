// SPDX-License-Identifier: MIT
/*
 * zvmmd's wire format, zvmmd_parse() and zvmmd_build()
 * (lib/zvmmd_proto.c): the input as one received record, then the input
 * as the body of each type under a valid header, so the body checks are
 * reached without the fuzzer first finding the magic. Every message parse takes must hold
 * what zvmmd_proto.h promises of its type, and must be the one canonical
 * encoding of its fields: built again from them it is the same bytes,
 * which parse to the same fields; a byte shorter or longer, refused.
 */
#include <errno.h>

#include "../lib/zvmmd_proto.h"
#include "fuzz.h"

#define HDR sizeof(struct zvmmd_hdr)

static const uint16_t types[] = { ZVMMD_LEASE, ZVMMD_STATUS, ZVMMD_LEASE_OK,
				  ZVMMD_STATUS_OK, ZVMMD_ERROR };

static int page_size_ok(uint64_t page_bytes)
{
	return page_bytes == 2ull << 20 || page_bytes == 1ull << 30;
}

/* What zvmmd_proto.h promises of an accepted message, from @m alone. */
static void check_fields(const struct zvmmd_msg *m)
{
	const struct zvmmd_lease_req *q = &m->req;
	const struct zvmmd_lease_rep *r = &m->rep;
	uint64_t zero = 0, empty = 0;
	struct zvmmd_chunk_ent e;

	fuzz_assert(m->len <= ZVMMD_MSG_MAX - HDR, "len %u", m->len);
	switch (m->type) {
	case ZVMMD_LEASE:
		fuzz_assert(m->len == sizeof(*q), "LEASE len %u", m->len);
		fuzz_assert(page_size_ok(q->page_bytes), "LEASE page %llu",
			    (unsigned long long)q->page_bytes);
		fuzz_assert(q->bytes && !(q->bytes % q->page_bytes),
			    "LEASE bytes %llu", (unsigned long long)q->bytes);
		fuzz_assert(q->node >= -1 && !q->flags,
			    "LEASE node %d flags %u", q->node, q->flags);
		break;
	case ZVMMD_STATUS:
		fuzz_assert(!m->len, "STATUS len %u", m->len);
		break;
	case ZVMMD_LEASE_OK:
		fuzz_assert(r->nr_chunks >= 1 &&
				    r->nr_chunks <= ZVMMD_MAX_CHUNKS,
			    "LEASE_OK of %u entries", r->nr_chunks);
		fuzz_assert(m->len == sizeof(*r) + r->nr_chunks * sizeof(e),
			    "LEASE_OK len %u for %u entries", m->len,
			    r->nr_chunks);
		fuzz_assert(page_size_ok(r->page_bytes), "LEASE_OK page %llu",
			    (unsigned long long)r->page_bytes);
		for (unsigned int i = 0; i < r->nr_chunks; i++) {
			fuzz_assert(!zvmmd_chunk_at(m, i, &e), "entry %u", i);
			fuzz_assert(e.bytes && !(e.bytes % r->page_bytes) &&
					    !e.reserved,
				    "entry %u: %llu bytes, reserved %u", i,
				    (unsigned long long)e.bytes, e.reserved);
			fuzz_assert(e.state == ZVMMD_CHUNK_ZERO ||
					    e.state == ZVMMD_CHUNK_EMPTY,
				    "entry %u state %u", i, e.state);
			/* Equal totals below mean neither sum wrapped. */
			if (e.state == ZVMMD_CHUNK_ZERO)
				zero += e.bytes;
			else
				empty += e.bytes;
		}
		fuzz_assert(zvmmd_chunk_at(m, r->nr_chunks, &e) == -EINVAL,
			    "an entry past the last");
		fuzz_assert(r->zero_bytes == zero && r->empty_bytes == empty,
			    "totals %llu/%llu, entries %llu/%llu",
			    (unsigned long long)r->zero_bytes,
			    (unsigned long long)r->empty_bytes,
			    (unsigned long long)zero,
			    (unsigned long long)empty);
		break;
	case ZVMMD_STATUS_OK:
		fuzz_assert(!memchr(m->body, '\0', m->len), "NUL in STATUS_OK");
		break;
	case ZVMMD_ERROR:
		fuzz_assert(m->len == sizeof(m->error), "ERROR len %u", m->len);
		fuzz_assert(m->error.err >= 1 &&
				    m->error.err <= ZVMMD_ERRNO_MAX &&
				    !m->error.reserved,
			    "ERROR err %d reserved %u", m->error.err,
			    m->error.reserved);
		fuzz_assert(memchr(m->error.msg, '\0', sizeof(m->error.msg)),
			    "ERROR msg without a NUL");
		break;
	default:
		fuzz_assert(0, "took type %#x", m->type);
	}
	if (m->type != ZVMMD_LEASE_OK)
		fuzz_assert(!m->chunks && zvmmd_chunk_at(m, 0, &e) == -EINVAL,
			    "entries in a type %#x", m->type);
}

/* The body zvmmd_build() is given for @m's fields, in @body. */
static size_t body_of(const struct zvmmd_msg *m, uint8_t *body)
{
	struct zvmmd_chunk_ent e;
	size_t n = 0;

	switch (m->type) {
	case ZVMMD_LEASE:
		memcpy(body, &m->req, sizeof(m->req));
		return sizeof(m->req);
	case ZVMMD_LEASE_OK:
		memcpy(body, &m->rep, sizeof(m->rep));
		n = sizeof(m->rep);
		for (unsigned int i = 0; i < m->rep.nr_chunks; i++) {
			fuzz_assert(!zvmmd_chunk_at(m, i, &e), "entry %u", i);
			memcpy(body + n, &e, sizeof(e));
			n += sizeof(e);
		}
		return n;
	case ZVMMD_STATUS_OK:
		memcpy(body, m->body, m->len);
		return m->len;
	case ZVMMD_ERROR:
		memcpy(body, &m->error, sizeof(m->error));
		return sizeof(m->error);
	}
	return 0;
}

static void same_fields(const struct zvmmd_msg *a, const struct zvmmd_msg *b)
{
	fuzz_assert(a->type == b->type && a->len == b->len, "%#x/%u to %#x/%u",
		    a->type, a->len, b->type, b->len);
	fuzz_assert(!memcmp(&a->req, &b->req, sizeof(a->req)) &&
			    !memcmp(&a->rep, &b->rep, sizeof(a->rep)) &&
			    !memcmp(&a->error, &b->error, sizeof(a->error)),
		    "type %#x: the fixed body changed", a->type);
	fuzz_assert(!memcmp(a->body, b->body, a->len),
		    "type %#x: the body changed", a->type);
}

/* @msg (@len bytes) was taken as @m: check it, rebuild it, reparse. */
static void accepted(const uint8_t *msg, size_t len, const struct zvmmd_msg *m)
{
	static uint8_t body[ZVMMD_MSG_MAX], again[ZVMMD_MSG_MAX + 1];
	struct zvmmd_msg back;
	size_t n;
	int ret;

	fuzz_assert(len >= HDR && len <= ZVMMD_MSG_MAX && m->len == len - HDR,
		    "took %zu bytes as a body of %u", len, m->len);
	fuzz_assert(m->body == msg + HDR, "body not in the buffer");
	check_fields(m);

	n = body_of(m, body);
	ret = zvmmd_build(again, sizeof(again), m->type, body, n);
	fuzz_assert(ret == (int)len, "rebuilt %d bytes of %zu", ret, len);
	fuzz_assert(!memcmp(again, msg, len), "type %#x rebuilt differently",
		    m->type);
	ret = zvmmd_parse(again, len, &back);
	fuzz_assert(!ret, "type %#x: its rebuilt message refused: %d", m->type,
		    ret);
	same_fields(m, &back);

	/* A record cut short, or one with a byte more, is no message. */
	memset(&back, 0xa5, sizeof(back));
	ret = zvmmd_parse(msg, len - 1, &back);
	fuzz_assert(ret == -EPROTO, "taken cut short: %d", ret);
	again[len] = 0;
	ret = zvmmd_parse(again, len + 1, &back);
	fuzz_assert(ret == -EPROTO || ret == -EMSGSIZE, "taken longer: %d",
		    ret);
}

static void parse_one(const uint8_t *data, size_t size)
{
	struct zvmmd_msg m, before;
	struct zvmmd_hdr h;
	int ret;

	memset(&m, 0xa5, sizeof(m));
	memcpy(&before, &m, sizeof(m));
	ret = zvmmd_parse(data, size, &m);
	if (!ret) {
		accepted(data, size, &m);
		return;
	}
	fuzz_assert(ret == -EPROTO || ret == -EPROTONOSUPPORT ||
			    ret == -EMSGSIZE || ret == -EINVAL,
		    "parse %d", ret);
	fuzz_assert(!memcmp(&m, &before, sizeof(m)), "refused (%d), written",
		    ret);
	if (size < HDR) {
		fuzz_assert(ret == -EPROTO, "%zu bytes: %d", size, ret);
		return;
	}
	/* The version is read before anything but the magic. */
	memcpy(&h, data, sizeof(h));
	if (h.magic == ZVMMD_MAGIC && h.version != ZVMMD_VERSION)
		fuzz_assert(ret == -EPROTONOSUPPORT, "version %u: %d",
			    h.version, ret);
	if (ret == -EINVAL)
		fuzz_assert(h.type == ZVMMD_LEASE, "-EINVAL for type %#x",
			    h.type);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t msg[ZVMMD_MSG_MAX + 1];
	int ret;

	parse_one(data, size);

	/* The input as each type's body, under a header zvmmd_build() wrote. */
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		ret = zvmmd_build(msg, sizeof(msg), types[t], data, size);
		if (size > ZVMMD_MSG_MAX - HDR) {
			fuzz_assert(ret == -EMSGSIZE, "built %zu bytes: %d",
				    size, ret);
			continue;
		}
		fuzz_assert(ret == (int)(HDR + size), "built %d of %zu", ret,
			    HDR + size);
		parse_one(msg, (size_t)ret);
	}
	return 0;
}
