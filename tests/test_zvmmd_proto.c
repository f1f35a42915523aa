// SPDX-License-Identifier: MIT
/*
 * zvmmd's wire format (lib/zvmmd_proto.h): every type built and parsed
 * back, and every malformed message refused with the errno
 * zvmmd_proto.h gives for it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/zvmmd_proto.h"

#define HDR sizeof(struct zvmmd_hdr)
#define MIB (1ull << 20)
#define GIB (1ull << 30)

/* One byte over an aligned start: parse must not need alignment. */
static unsigned char space[ZVMMD_MSG_MAX + 64] __attribute__((aligned(16)));
static unsigned char *const buf = space + 1;

static size_t build(uint16_t type, const void *body, size_t len)
{
	int n = zvmmd_build(buf, ZVMMD_MSG_MAX + 8, type, body, len);

	cr_assert_eq(n, (int)(HDR + len), "build %d", n);
	return (size_t)n;
}

/* Parses @len bytes of buf: the result, with @m untouched on error. */
static int parse(size_t len, struct zvmmd_msg *m)
{
	struct zvmmd_msg before;
	int ret;

	memset(m, 0x5a, sizeof(*m));
	memcpy(&before, m, sizeof(before));
	ret = zvmmd_parse(buf, len, m);
	if (ret)
		cr_assert(!memcmp(m, &before, sizeof(before)),
			  "refused (%d) but wrote the message", ret);
	return ret;
}

static int parse_body(uint16_t type, const void *body, size_t len)
{
	struct zvmmd_msg m;

	return parse(build(type, body, len), &m);
}

static struct zvmmd_lease_req lease(uint64_t bytes, uint64_t page)
{
	return (struct zvmmd_lease_req){
		.bytes = bytes,
		.page_bytes = page,
		.node = -1,
	};
}

/* A LEASE_OK body of @n 2 MiB entries, ZERO then EMPTY in turn. */
static size_t lease_ok_body(unsigned char *body, unsigned int n)
{
	struct zvmmd_lease_rep r = { .lease_id = 9,
				     .nr_chunks = n,
				     .page_bytes = 2 * MIB };
	struct zvmmd_chunk_ent e = { .bytes = 2 * MIB };

	for (unsigned int i = 0; i < n; i++) {
		e.state = i % 2 ? ZVMMD_CHUNK_EMPTY : ZVMMD_CHUNK_ZERO;
		if (i % 2)
			r.empty_bytes += e.bytes;
		else
			r.zero_bytes += e.bytes;
		memcpy(body + sizeof(r) + i * sizeof(e), &e, sizeof(e));
	}
	memcpy(body, &r, sizeof(r));
	return sizeof(r) + n * sizeof(e);
}

/* Entry @i of a LEASE_OK body, to change and put back. */
static struct zvmmd_chunk_ent *ent_at(unsigned char *body, unsigned int i,
				      struct zvmmd_chunk_ent *e)
{
	memcpy(e, body + sizeof(struct zvmmd_lease_rep) + i * sizeof(*e),
	       sizeof(*e));
	return e;
}

static void ent_put(unsigned char *body, unsigned int i,
		    const struct zvmmd_chunk_ent *e)
{
	memcpy(body + sizeof(struct zvmmd_lease_rep) + i * sizeof(*e), e,
	       sizeof(*e));
}

static struct zvmmd_error error_body(int err, const char *msg)
{
	struct zvmmd_error e = { .err = err };

	strcpy(e.msg, msg);
	return e;
}

Test(zvmmd_proto, lease_round_trip)
{
	struct zvmmd_lease_req q = lease(4 * GIB, GIB);
	struct zvmmd_msg m;

	q.node = 1;
	cr_assert_eq(parse(build(ZVMMD_LEASE, &q, sizeof(q)), &m), 0);
	cr_assert_eq(m.type, ZVMMD_LEASE);
	cr_assert_eq(m.len, sizeof(q));
	cr_assert(!memcmp(&m.req, &q, sizeof(q)));
	cr_assert_null(m.chunks);
	cr_assert_eq(m.error.err, 0);

	q = lease(2 * MIB, 2 * MIB);
	cr_assert_eq(parse(build(ZVMMD_LEASE, &q, sizeof(q)), &m), 0);
	cr_assert_eq(m.req.node, -1);
	cr_assert_eq(m.req.bytes, 2 * MIB);
}

Test(zvmmd_proto, status_round_trip)
{
	struct zvmmd_msg m;
	size_t n = build(ZVMMD_STATUS, NULL, 0);

	cr_assert_eq(n, HDR);
	cr_assert_eq(parse(n, &m), 0);
	cr_assert_eq(m.type, ZVMMD_STATUS);
	cr_assert_eq(m.len, 0);
}

Test(zvmmd_proto, lease_ok_round_trip)
{
	static unsigned char body[4096];
	struct zvmmd_chunk_ent e;
	struct zvmmd_msg m;
	size_t len = lease_ok_body(body, 3);

	cr_assert_eq(parse(build(ZVMMD_LEASE_OK, body, len), &m), 0);
	cr_assert_eq(m.type, ZVMMD_LEASE_OK);
	cr_assert_eq(m.rep.lease_id, 9);
	cr_assert_eq(m.rep.nr_chunks, 3);
	cr_assert_eq(m.rep.page_bytes, 2 * MIB);
	cr_assert_eq(m.rep.zero_bytes, 4 * MIB);
	cr_assert_eq(m.rep.empty_bytes, 2 * MIB);
	for (unsigned int i = 0; i < 3; i++) {
		cr_assert_eq(zvmmd_chunk_at(&m, i, &e), 0);
		cr_assert_eq(e.bytes, 2 * MIB);
		cr_assert_eq(e.state,
			     i % 2 ? ZVMMD_CHUNK_EMPTY : ZVMMD_CHUNK_ZERO);
	}
	cr_assert_eq(zvmmd_chunk_at(&m, 3, &e), -EINVAL);

	/* The most entries: 4 KiB, and the body written in place. */
	len = lease_ok_body(buf + HDR, ZVMMD_MAX_CHUNKS);
	cr_assert_eq(HDR + len, 4096);
	cr_assert_eq(parse(build(ZVMMD_LEASE_OK, NULL, len), &m), 0);
	cr_assert_eq(m.rep.nr_chunks, ZVMMD_MAX_CHUNKS);
	cr_assert_eq(zvmmd_chunk_at(&m, ZVMMD_MAX_CHUNKS - 1, &e), 0);
	cr_assert_eq(e.state, ZVMMD_CHUNK_ZERO);

	/* One chunk of 1 GiB pages, the last longer than asked for. */
	len = lease_ok_body(body, 1);
	memcpy(&m.rep, body, sizeof(m.rep));
	m.rep.page_bytes = GIB;
	m.rep.zero_bytes = 3 * GIB;
	memcpy(body, &m.rep, sizeof(m.rep));
	ent_put(body, 0,
		&(struct zvmmd_chunk_ent){ .bytes = 3 * GIB,
					   .state = ZVMMD_CHUNK_ZERO });
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), 0);
}

Test(zvmmd_proto, status_ok_round_trip)
{
	static char text[ZVMMD_MSG_MAX];
	const char *json = "{\"pools\":[]}";
	struct zvmmd_msg m;

	cr_assert_eq(parse(build(ZVMMD_STATUS_OK, json, strlen(json)), &m), 0);
	cr_assert_eq(m.type, ZVMMD_STATUS_OK);
	cr_assert_eq(m.len, strlen(json));
	cr_assert(!memcmp(m.body, json, m.len));
	cr_assert_eq(m.body, buf + HDR, "the text is read in place");

	cr_assert_eq(parse_body(ZVMMD_STATUS_OK, "", 0), 0);
	memset(text, ' ', sizeof(text));
	cr_assert_eq(parse_body(ZVMMD_STATUS_OK, text, ZVMMD_MSG_MAX - HDR), 0);
}

Test(zvmmd_proto, error_round_trip)
{
	struct zvmmd_error e = error_body(ENOMEM, "no free 1 GiB pages");
	struct zvmmd_msg m;

	cr_assert_eq(parse(build(ZVMMD_ERROR, &e, sizeof(e)), &m), 0);
	cr_assert_eq(m.type, ZVMMD_ERROR);
	cr_assert_eq(m.error.err, ENOMEM);
	cr_assert_str_eq(m.error.msg, "no free 1 GiB pages");
	cr_assert_eq(m.rep.nr_chunks, 0);

	/* The largest errno, and a message filling all but its NUL. */
	e = error_body(ZVMMD_ERRNO_MAX, "");
	memset(e.msg, 'x', sizeof(e.msg) - 1);
	cr_assert_eq(parse_body(ZVMMD_ERROR, &e, sizeof(e)), 0);
}

Test(zvmmd_proto, refuses_bad_headers)
{
	/* Unknown types, each side's. */
	static const uint16_t unknown[] = { 0, 3, 0x80, 0x83, 0xfe, 0x100 };
	struct zvmmd_hdr h;
	struct zvmmd_msg m;
	size_t n = build(ZVMMD_STATUS, NULL, 0);

	cr_assert_eq(parse(0, &m), -EPROTO);
	cr_assert_eq(parse(HDR - 1, &m), -EPROTO);

	memcpy(&h, buf, sizeof(h));
	h.magic = 0x444d565bU;
	memcpy(buf, &h, sizeof(h));
	cr_assert_eq(parse(n, &m), -EPROTO);

	for (unsigned int i = 0; i < sizeof(unknown) / sizeof(*unknown); i++)
		cr_assert_eq(parse(build(unknown[i], NULL, 0), &m), -EPROTO,
			     "type %#x", unknown[i]);

	build(ZVMMD_STATUS, NULL, 0);
	memcpy(&h, buf, sizeof(h));
	h.reserved = 1;
	memcpy(buf, &h, sizeof(h));
	cr_assert_eq(parse(n, &m), -EPROTO);

	/* The header's len and the record's disagree, either way. */
	build(ZVMMD_STATUS, NULL, 0);
	buf[HDR] = 0;
	cr_assert_eq(parse(n + 1, &m), -EPROTO);
	build(ZVMMD_STATUS_OK, "{}", 2);
	cr_assert_eq(parse(HDR + 1, &m), -EPROTO);
}

Test(zvmmd_proto, another_version_before_anything_else)
{
	static const uint16_t versions[] = { 0, 2, 0xffff };
	struct zvmmd_hdr h;
	struct zvmmd_msg m;

	/* A later version may change type, len and reserved at will. */
	for (unsigned int i = 0; i < sizeof(versions) / sizeof(*versions);
	     i++) {
		build(ZVMMD_LEASE, NULL, 0);
		memcpy(&h, buf, sizeof(h));
		h.version = versions[i];
		h.type = 0x1234;
		h.len = 7;
		h.reserved = 1;
		memcpy(buf, &h, sizeof(h));
		cr_assert_eq(parse(HDR + 100, &m), -EPROTONOSUPPORT, "v%u",
			     versions[i]);
		cr_assert_eq(parse(ZVMMD_MSG_MAX + 1, &m), -EPROTONOSUPPORT);
	}
}

Test(zvmmd_proto, too_large)
{
	struct zvmmd_msg m;

	build(ZVMMD_STATUS_OK, NULL, ZVMMD_MSG_MAX - HDR);
	cr_assert_eq(parse(ZVMMD_MSG_MAX + 1, &m), -EMSGSIZE);
}

Test(zvmmd_proto, body_sizes_exact)
{
	struct zvmmd_lease_req q[2] = { lease(2 * MIB, 2 * MIB) };
	struct zvmmd_error e[2] = { error_body(EINVAL, "bad") };
	static unsigned char body[4096 + 32];
	size_t len = lease_ok_body(body, 2);

	cr_assert_eq(parse_body(ZVMMD_LEASE, q, sizeof(q[0]) - 1), -EPROTO);
	cr_assert_eq(parse_body(ZVMMD_LEASE, q, sizeof(q[0]) + 1), -EPROTO);
	cr_assert_eq(parse_body(ZVMMD_STATUS, "x", 1), -EPROTO);
	cr_assert_eq(parse_body(ZVMMD_ERROR, e, sizeof(e[0]) - 1), -EPROTO);
	cr_assert_eq(parse_body(ZVMMD_ERROR, e, sizeof(e[0]) + 1), -EPROTO);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), 0);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len - 1), -EPROTO);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len + 1), -EPROTO);
	/* An entry fewer or more than nr_chunks says. */
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len - 16), -EPROTO);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len + 16), -EPROTO);
	/* Not even the fixed reply. */
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, 31), -EPROTO);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, 0), -EPROTO);
}

Test(zvmmd_proto, refuses_bad_leases)
{
	static const struct {
		uint64_t bytes, page;
	} bad[] = {
		{ 0, 2 * MIB }, /* nothing */
		{ 0, GIB }, /* nothing */
		{ 2 * MIB + 4096, 2 * MIB }, /* not whole pages */
		{ 3 * MIB, 2 * MIB }, /* not whole pages */
		{ 2 * MIB, GIB }, /* less than a page */
		{ 4096, 4096 }, /* 4 KiB pages */
		{ 2 * MIB, 4096 }, /* 4 KiB pages */
		{ 2 * MIB, 0 }, /* no page size */
		{ 16 * GIB, 16 * GIB }, /* 16 GiB pages */
		{ 4 * MIB, 4 * MIB }, /* not a hugepage size */
	};
	struct zvmmd_lease_req q;

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		q = lease(bad[i].bytes, bad[i].page);
		cr_assert_eq(parse_body(ZVMMD_LEASE, &q, sizeof(q)), -EINVAL,
			     "%llu bytes of %llu",
			     (unsigned long long)bad[i].bytes,
			     (unsigned long long)bad[i].page);
	}

	q = lease(2 * MIB, 2 * MIB);
	q.node = -2;
	cr_assert_eq(parse_body(ZVMMD_LEASE, &q, sizeof(q)), -EINVAL);
	q.node = INT32_MIN;
	cr_assert_eq(parse_body(ZVMMD_LEASE, &q, sizeof(q)), -EINVAL);
	q.node = 0;
	q.flags = 1;
	cr_assert_eq(parse_body(ZVMMD_LEASE, &q, sizeof(q)), -EINVAL);
	q.flags = 0x80000000U;
	cr_assert_eq(parse_body(ZVMMD_LEASE, &q, sizeof(q)), -EINVAL);
	q.flags = 0;
	cr_assert_eq(parse_body(ZVMMD_LEASE, &q, sizeof(q)), 0);
}

Test(zvmmd_proto, refuses_bad_lease_ok)
{
	static const uint32_t states[] = { 0, 3, 0xffffffffU };
	/* 4 KiB, none, and 1 GiB when the entries are 2 MiB. */
	static const uint64_t pages[] = { 4096, 0, GIB };
	static unsigned char body[4096 + 32];
	struct zvmmd_lease_rep r;
	struct zvmmd_chunk_ent e;
	size_t len;

	/* No entries, and one more than SCM_RIGHTS can carry. */
	len = lease_ok_body(body, 0);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO);
	len = lease_ok_body(body, ZVMMD_MAX_CHUNKS + 1);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO);

	len = lease_ok_body(body, 2);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), 0);

	ent_at(body, 1, &e)->bytes = 0;
	ent_put(body, 1, &e);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO,
		     "entry of 0 bytes");

	len = lease_ok_body(body, 2);
	ent_at(body, 0, &e)->bytes = 2 * MIB + 4096;
	ent_put(body, 0, &e);
	memcpy(&r, body, sizeof(r));
	r.zero_bytes = e.bytes;
	memcpy(body, &r, sizeof(r));
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO,
		     "entry not whole pages");

	for (unsigned int i = 0; i < sizeof(states) / sizeof(*states); i++) {
		len = lease_ok_body(body, 2);
		ent_at(body, 0, &e)->state = states[i];
		ent_put(body, 0, &e);
		cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO,
			     "state %u", states[i]);
	}

	len = lease_ok_body(body, 2);
	ent_at(body, 1, &e)->reserved = 1;
	ent_put(body, 1, &e);
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO,
		     "entry reserved");

	for (unsigned int i = 0; i < sizeof(pages) / sizeof(*pages); i++) {
		len = lease_ok_body(body, 2);
		memcpy(&r, body, sizeof(r));
		r.page_bytes = pages[i];
		memcpy(body, &r, sizeof(r));
		cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO,
			     "page %llu", (unsigned long long)pages[i]);
	}

	/* Totals that are not the entries'. */
	len = lease_ok_body(body, 2);
	memcpy(&r, body, sizeof(r));
	r.zero_bytes += 2 * MIB;
	memcpy(body, &r, sizeof(r));
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO);
	r.zero_bytes -= 2 * MIB;
	r.empty_bytes = 0;
	memcpy(body, &r, sizeof(r));
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO);

	/* Two halves of 2^64 would sum to a zero_bytes of 0. */
	len = lease_ok_body(body, 2);
	for (unsigned int i = 0; i < 2; i++)
		ent_put(body, i,
			&(struct zvmmd_chunk_ent){ .bytes = 1ull << 63,
						   .state = ZVMMD_CHUNK_ZERO });
	memcpy(&r, body, sizeof(r));
	r.zero_bytes = 0;
	r.empty_bytes = 0;
	memcpy(body, &r, sizeof(r));
	cr_assert_eq(parse_body(ZVMMD_LEASE_OK, body, len), -EPROTO);
}

Test(zvmmd_proto, refuses_bad_errors)
{
	static const int errs[] = { 0, -1, -ENOMEM, ZVMMD_ERRNO_MAX + 1,
				    INT32_MAX };
	struct zvmmd_error e;

	for (unsigned int i = 0; i < sizeof(errs) / sizeof(*errs); i++) {
		e = error_body(errs[i], "x");
		cr_assert_eq(parse_body(ZVMMD_ERROR, &e, sizeof(e)), -EPROTO,
			     "err %d", errs[i]);
	}

	e = error_body(EACCES, "x");
	e.reserved = 1;
	cr_assert_eq(parse_body(ZVMMD_ERROR, &e, sizeof(e)), -EPROTO);

	e = error_body(EACCES, "");
	memset(e.msg, 'x', sizeof(e.msg));
	cr_assert_eq(parse_body(ZVMMD_ERROR, &e, sizeof(e)), -EPROTO,
		     "msg without a NUL");
}

Test(zvmmd_proto, refuses_nul_in_status_text)
{
	cr_assert_eq(parse_body(ZVMMD_STATUS_OK, "{}\0", 3), -EPROTO);
	cr_assert_eq(parse_body(ZVMMD_STATUS_OK, "\0{}", 3), -EPROTO);
}

Test(zvmmd_proto, chunk_at_only_lease_ok)
{
	struct zvmmd_lease_req q = lease(2 * MIB, 2 * MIB);
	struct zvmmd_chunk_ent e;
	struct zvmmd_msg m;

	cr_assert_eq(parse(build(ZVMMD_LEASE, &q, sizeof(q)), &m), 0);
	cr_assert_eq(zvmmd_chunk_at(&m, 0, &e), -EINVAL);
}

Test(zvmmd_proto, build_emsgsize)
{
	static unsigned char big[ZVMMD_MSG_MAX * 2];
	struct zvmmd_lease_req q = lease(2 * MIB, 2 * MIB);

	cr_assert_eq(zvmmd_build(big, 0, ZVMMD_STATUS, NULL, 0), -EMSGSIZE);
	cr_assert_eq(zvmmd_build(big, HDR - 1, ZVMMD_STATUS, NULL, 0),
		     -EMSGSIZE);
	cr_assert_eq(zvmmd_build(big, HDR, ZVMMD_STATUS, NULL, 0), (int)HDR);
	cr_assert_eq(zvmmd_build(big, HDR + sizeof(q) - 1, ZVMMD_LEASE, &q,
				 sizeof(q)),
		     -EMSGSIZE);
	cr_assert_eq(zvmmd_build(big, HDR + sizeof(q), ZVMMD_LEASE, &q,
				 sizeof(q)),
		     (int)(HDR + sizeof(q)));
	/* Whatever the buffer, no message exceeds ZVMMD_MSG_MAX. */
	cr_assert_eq(zvmmd_build(big, sizeof(big), ZVMMD_STATUS_OK, NULL,
				 ZVMMD_MSG_MAX - HDR),
		     ZVMMD_MSG_MAX);
	cr_assert_eq(zvmmd_build(big, sizeof(big), ZVMMD_STATUS_OK, NULL,
				 ZVMMD_MSG_MAX - HDR + 1),
		     -EMSGSIZE);
	cr_assert_eq(zvmmd_build(big, sizeof(big), ZVMMD_STATUS_OK, NULL,
				 SIZE_MAX),
		     -EMSGSIZE);
}

Test(zvmmd_proto, build_writes_the_header)
{
	struct zvmmd_lease_req q = lease(2 * MIB, 2 * MIB);
	struct zvmmd_hdr h;

	memset(buf, 0xee, 64);
	build(ZVMMD_LEASE, &q, sizeof(q));
	memcpy(&h, buf, sizeof(h));
	cr_assert_eq(h.magic, ZVMMD_MAGIC);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	cr_assert(!memcmp(buf, "ZVMD", 4), "the magic reads ZVMD");
#endif
	cr_assert_eq(h.version, ZVMMD_VERSION);
	cr_assert_eq(h.type, ZVMMD_LEASE);
	cr_assert_eq(h.len, sizeof(q));
	cr_assert_eq(h.reserved, 0);
	cr_assert(!memcmp(buf + HDR, &q, sizeof(q)));
	cr_assert_eq(buf[HDR + sizeof(q)], 0xee, "wrote past the message");
}
