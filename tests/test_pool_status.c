// SPDX-License-Identifier: MIT
/*
 * `zvmm pool status` against a stand-in zvmmd: a thread of the test
 * listening on a unix socket in a temporary directory answers the STATUS
 * with a reply made here (lib/zvmmd_proto.h's wire format), so the output
 * is known to the byte and a malformed reply can be sent. zvmm's output
 * is captured, expected errors included. And the STATUS table of
 * docs/zvmmd-protocol.md is the one zvmm reads by (lib/zvmmd_status.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../lib/zvmmd_proto.h"
#include "../lib/zvmmd_status.h"
#include "helpers.h"

static char dir[48], sock[96], json_path[96];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/zvmm-test-pool-status.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/zvmmd.sock", dir);
	snprintf(json_path, sizeof(json_path), "%s/status.json", dir);
}

static void teardown(void)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/reply.json", dir);
	unlink(path);
	unlink(sock);
	unlink(json_path);
	rmdir(dir);
}

TestSuite(pool_status, .init = setup, .fini = teardown, .timeout = 60);

struct stand_in {
	int lfd;
	const char *body; /* STATUS_OK's text */
	bool asked; /* the request was a STATUS */
};

/* One connection: a STATUS in, the reply out, then until zvmm closes. */
static void *serve(void *arg)
{
	struct stand_in *s = arg;
	struct pollfd pf = { .fd = s->lfd, .events = POLLIN };
	static char buf[ZVMMD_MSG_MAX];
	struct zvmmd_msg m;
	ssize_t n;
	int c, len;

	/* A zvmm that never connects fails the test, never hangs it. */
	if (poll(&pf, 1, 20000) != 1)
		return NULL;
	c = accept(s->lfd, NULL, NULL);
	if (c < 0)
		return NULL;
	n = recv(c, buf, sizeof(buf), 0);
	s->asked = n > 0 && !zvmmd_parse(buf, (size_t)n, &m) &&
		   m.type == ZVMMD_STATUS;
	len = zvmmd_build(buf, sizeof(buf), ZVMMD_STATUS_OK, s->body,
			  strlen(s->body));
	if (s->asked && len > 0)
		(void)!send(c, buf, (size_t)len, MSG_NOSIGNAL);
	(void)!recv(c, buf, sizeof(buf), 0);
	close(c);
	return NULL;
}

/* Runs zvmm pool status with @args (NULL-terminated) against @body. */
static void pool_status(const char *body, const char *const *args,
			struct test_run *r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stand_in s = { .body = body };
	const char *argv[16] = { "pool", "status", "--socket", sock };
	pthread_t t;
	int n = 4;

	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	s.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	cr_assert_geq(s.lfd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	unlink(sock);
	cr_assert_eq(bind(s.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0,
		     "bind %s: %s", sock, strerror(errno));
	cr_assert_eq(listen(s.lfd, 1), 0);
	cr_assert_eq(pthread_create(&t, NULL, serve, &s), 0);
	cr_assert_eq(test_run_zvmm(argv, false, r), 0);
	pthread_join(t, NULL);
	close(s.lfd);
	unlink(sock);
	cr_assert(s.asked, "zvmm sent no STATUS; it said:\n%s", r->out);
}

/*
 * Two pools of 2 MiB pages, on nodes 1 and 0, and one of 1 GiB pages on
 * any node: the first with three leases, two of them listed (the third
 * another user's, as a member's STATUS counts it), and two quarantined
 * chunks, one of them held by a process zvmmd could not name (pid 0). Each node is
 * told apart from the sizes printed beside it. The second's mount holds
 * 512 MiB no scan found (unseen).
 */
static const char reply[] =
	"{\"version\":\"0.1.0\",\"pid\":4242,\"pools\":["
	"{\"page_bytes\":2097152,\"node\":1,\"chunk_bytes\":268435456,"
	"\"clean_bytes\":3221225472,\"dirty_bytes\":268435456,"
	"\"zero_bytes\":3221225472,\"filling_bytes\":268435456,"
	"\"leased_bytes\":3221225472,\"quarantined_bytes\":536870912,"
	"\"unseen_bytes\":0,"
	"\"low_bytes\":1073741824,\"high_bytes\":4294967296,"
	"\"max_bytes\":17179869184,\"reserve_bytes\":1073741824,"
	"\"scrubbed_bytes\":21474836480,"
	"\"scrub_gbps\":12.5,\"leases_total\":3,\"quarantined_total\":2,"
	"\"leases\":["
	"{\"id\":7,\"pid\":1234,\"comm\":\"qemu-system-x86\",\"uid\":1000,"
	"\"bytes\":2147483648},"
	"{\"id\":9,\"pid\":1300,\"comm\":\"minivmm\",\"uid\":0,"
	"\"bytes\":1073741824}],\"quarantined\":["
	"{\"chunk\":\"chunk-2M-node1-3\",\"bytes\":268435456,"
	"\"holder_pid\":999,\"holder_comm\":\"gdb\"},"
	"{\"chunk\":\"chunk-2M-node1-5\",\"bytes\":268435456,"
	"\"holder_pid\":0,\"holder_comm\":\"?\"}]},"
	"{\"page_bytes\":2097152,\"node\":0,\"chunk_bytes\":268435456,"
	"\"clean_bytes\":1073741824,\"dirty_bytes\":0,\"zero_bytes\":1073741824,"
	"\"filling_bytes\":0,\"leased_bytes\":0,"
	"\"quarantined_bytes\":0,\"unseen_bytes\":536870912,"
	"\"low_bytes\":0,\"high_bytes\":1073741824,"
	"\"max_bytes\":1073741824,\"scrubbed_bytes\":1073741824,"
	"\"scrub_gbps\":20.25,\"leases_total\":0,\"quarantined_total\":0,"
	"\"leases\":[],\"quarantined\":[]},"
	"{\"page_bytes\":1073741824,\"node\":-1,\"chunk_bytes\":1073741824,"
	"\"clean_bytes\":0,\"dirty_bytes\":0,\"zero_bytes\":0,"
	"\"filling_bytes\":0,\"leased_bytes\":0,"
	"\"quarantined_bytes\":0,\"unseen_bytes\":0,"
	"\"low_bytes\":0,\"high_bytes\":0,"
	"\"max_bytes\":4294967296,\"scrubbed_bytes\":0,\"scrub_gbps\":0,"
	"\"leases_total\":0,\"quarantined_total\":0,"
	"\"leases\":[],\"quarantined\":[]}],"
	"\"members_to_come\":{\"zvmm skips\":[1,\"them\"]}}";

/* zvmm pool status of the reply above. */
static const char want_table[] =
	"zvmmd 0.1.0, pid 4242\n"
	"pages  node  chunk      zero       filling    leased     quarantined  fill rate\n"
	"2M     1     256.0 MiB  3.0 GiB    256.0 MiB  3.0 GiB    512.0 MiB    12.5 GB/s\n"
	"  root's reserve: 1.0 GiB of its max, held by the kernel for root's leases alone\n"
	"  lease 7: pid 1234 (qemu-system-x86), uid 1000, 2.0 GiB\n"
	"  lease 9: pid 1300 (minivmm), uid 0, 1.0 GiB\n"
	"  1 more leases, not listed\n"
	"  quarantined chunk-2M-node1-3: 256.0 MiB, held by pid 999 (gdb)\n"
	"  quarantined chunk-2M-node1-5: 256.0 MiB, held by pid 0 (?)\n"
	"2M     0     256.0 MiB  1.0 GiB    0 B        0 B        0 B          20.2 GB/s\n"
	"  unseen: 512.0 MiB in use in its mount beyond the above, held where no scan looks (an fd in flight, a pipe's pages, a previous zvmmd's tenants): counted held, never leased\n"
	"1G     any   1.0 GiB    0 B        0 B        0 B        0 B          0.0 GB/s\n";

Test(pool_status, table_of_pools_on_nodes_leases_and_quarantined)
{
	struct test_run r;

	pool_status(reply, (const char *[]){ NULL }, &r);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert_str_eq(r.out, want_table);
}

/* @in without any member "@key":N, (an integer member not last). */
static void strip(const char *in, const char *key, char *out, size_t len)
{
	char pat[64];
	size_t n = 0, plen;

	plen = (size_t)snprintf(pat, sizeof(pat), "\"%s\":", key);
	while (*in && n + 1 < len) {
		if (!strncmp(in, pat, plen)) {
			in += plen;
			in += strspn(in, "-0123456789");
			cr_assert_eq(*in, ',', "%s is not followed by ','",
				     key);
			in++;
			continue;
		}
		out[n++] = *in++;
	}
	out[n] = '\0';
}

/* The reply as zvmmd 0.1.0 sent it: no member added since. */
static void older_reply(char *out, size_t len)
{
	static const char *const added[] = {
		"unseen_bytes", "zero_bytes",	     "filling_bytes",
		"leases_total", "quarantined_total", "reserve_bytes"
	};
	char *tmp = malloc(len);

	cr_assert_not_null(tmp);
	snprintf(out, len, "%s", reply);
	for (size_t i = 0; i < sizeof(added) / sizeof(added[0]); i++) {
		strip(out, added[i], tmp, len);
		snprintf(out, len, "%s", tmp);
		cr_assert_null(strstr(out, added[i]));
	}
	free(tmp);
}

/*
 * A zvmmd older than this zvmm (still running after an upgrade) is read:
 * the members added since come from what it sent (clean_bytes for
 * zero_bytes, the lists' lengths for the totals, no unseen).
 */
Test(pool_status, an_older_zvmmds_status_is_read)
{
	static char old[sizeof(reply)];
	static const char unseen_line[] =
		"  unseen: 512.0 MiB in use in its mount beyond the above, held where no scan looks (an fd in flight, a pipe's pages, a previous zvmmd's tenants): counted held, never leased\n";
	static char want[sizeof(want_table)];
	const char *at = strstr(want_table, unseen_line);
	struct test_run r;

	cr_assert_not_null(at);
	snprintf(want, sizeof(want), "%.*s%s", (int)(at - want_table),
		 want_table, at + strlen(unseen_line));
	/* No reserve either. */
	at = strstr(want, "  root's reserve: ");
	cr_assert_not_null(at);
	snprintf(old, sizeof(old), "%s", strchr(at, '\n') + 1);
	snprintf((char *)at, sizeof(want) - (size_t)(at - want), "%s", old);
	older_reply(old, sizeof(old));
	pool_status(old, (const char *[]){ NULL }, &r);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	/* Its third lease, another user's, is not counted: none said so. */
	at = strstr(want, "  1 more leases, not listed\n");
	cr_assert_not_null(at);
	snprintf(old, sizeof(old), "%.*s%s", (int)(at - want), want,
		 at + strlen("  1 more leases, not listed\n"));
	cr_assert_str_eq(r.out, old);
}

/*
 * docs/zvmmd-status.schema.json is the rows' (`make schema`), and a
 * reply of this zvmmd and of an older one are valid under it, one out
 * of range is not (python3-jsonschema, `make deps`).
 */
#define STATUS_SCHEMA "docs/zvmmd-status.schema.json"

Test(pool_status, the_committed_schema_is_the_rows)
{
	json_object *want = zvmmd_status_json_schema();
	json_object *have = json_object_from_file(STATUS_SCHEMA);

	cr_assert_not_null(have, "cannot read %s (tests run from the tree)",
			   STATUS_SCHEMA);
	cr_assert(
		json_object_equal(want, have),
		"%s differs from lib/zvmmd_status.h's rows: run `make schema`",
		STATUS_SCHEMA);
	json_object_put(want);
	json_object_put(have);
}

/* Whether python3-jsonschema takes @json under the schema. */
static bool schema_valid(const char *json)
{
	static const char *py =
		"import json, sys, jsonschema\n"
		"jsonschema.validate(json.load(open(sys.argv[1])),"
		" json.load(open(sys.argv[2])))\n";
	char path[96], cmd[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/reply.json", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(json, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 -c '%s' %s %s >/dev/null 2>&1", py,
		 path, STATUS_SCHEMA);
	return !system(cmd);
}

Test(pool_status, replies_are_valid_under_the_schema)
{
	static char old[sizeof(reply)], bad[sizeof(reply) + 8];
	const char *at = strstr(reply, "\"node\":0,");

	if (system("python3 -c 'import jsonschema' 2>/dev/null"))
		test_skip(TEST_NEED_TOOL,
			  "python3-jsonschema missing: make deps");
	cr_assert(schema_valid(reply), "this zvmmd's reply is not valid");
	older_reply(old, sizeof(old));
	cr_assert(schema_valid(old), "zvmmd 0.1.0's reply is not valid");
	cr_assert_not_null(at);
	snprintf(bad, sizeof(bad), "%.*s\"node\":5000,%s", (int)(at - reply),
		 reply, at + strlen("\"node\":0,"));
	cr_assert_not(schema_valid(bad), "node 5000 passed");
}

/* --json: the daemon's text as it came, members zvmm skips included. */
Test(pool_status, json_is_the_daemons_status)
{
	char want[sizeof(reply) + 1], got[sizeof(reply) + 16];
	struct test_run r;
	FILE *f;
	size_t n;

	snprintf(want, sizeof(want), "%s\n", reply);
	pool_status(reply, (const char *[]){ "--json", "-", NULL }, &r);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert_str_eq(r.out, want);

	pool_status(reply, (const char *[]){ "--json", json_path, NULL }, &r);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert_str_empty(r.out);
	f = fopen(json_path, "r");
	cr_assert_not_null(f);
	n = fread(got, 1, sizeof(got) - 1, f);
	fclose(f);
	got[n] = '\0';
	cr_assert_str_eq(got, want);
}

/* The reply with its first @from replaced by @to, into @body. */
static void splice(const char *from, const char *to, char *body, size_t len)
{
	const char *at = strstr(reply, from);

	cr_assert_not_null(at, "%s", from);
	snprintf(body, len, "%.*s%s%s", (int)(at - reply), reply, to,
		 at + strlen(from));
}

/* A tenant names its process: no escape sequence reaches the terminal. */
Test(pool_status, names_are_shown_printable)
{
	char body[sizeof(reply) + 64];
	struct test_run r;

	/*
	 * ESC ] 2 ; x BEL, escaped, a raw ESC [ 2 J, and bytes that are not
	 * UTF-8 (prctl takes any), which zvmmd passes on as they are.
	 */
	splice("\"minivmm\"", "\"\\u001b]2;x\\u0007\x1b[2J\xff\xfe\"", body,
	       sizeof(body));
	pool_status(body, (const char *[]){ NULL }, &r);
	cr_assert_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert_not_null(strstr(r.out, "  lease 9: pid 1300 (?]2;x??[2J?"
					 "?),"),
			   "%s", r.out);
	cr_assert_null(strchr(r.out, 0x1b));
	cr_assert_null(strchr(r.out, 0x07));
}

/*
 * @from in the reply replaced by @to: zvmm exits 1 saying which member,
 * where the old reader aborted in json-c (exit 134) or printed 0.
 */
static void refused(const char *from, const char *to, const char *says)
{
	char body[sizeof(reply) + 256];
	struct test_run r;

	splice(from, to, body, sizeof(body));
	pool_status(body, (const char *[]){ NULL }, &r);
	cr_assert_eq(r.status, 1, "%s: exit %d:\n%s", to, r.status, r.out);
	cr_assert_not_null(strstr(r.out, says), "%s: said:\n%s", to, r.out);
	cr_assert_not_null(strstr(r.out, "sent a status zvmm cannot read"),
			   "%s", r.out);
	/* Refused before anything is printed: no half table. */
	cr_assert_null(strstr(r.out, "pages  node"), "%s", r.out);

	pool_status(body, (const char *[]){ "--json", "-", NULL }, &r);
	cr_assert_eq(r.status, 1, "--json, %s: exit %d:\n%s", to, r.status,
		     r.out);
	cr_assert_not_null(strstr(r.out, says), "%s", r.out);
}

Test(pool_status, malformed_reply_exits_1_naming_the_member)
{
	struct test_run r;

	/* The reply of the report: the first member missing is named. */
	pool_status("{\"pools\":{\"a\":1}}", (const char *[]){ NULL }, &r);
	cr_assert_eq(r.status, 1, "exit %d:\n%s", r.status, r.out);
	cr_assert_not_null(strstr(r.out, "version: missing"), "%s", r.out);

	refused("\"pools\":[", "\"pools\":{\"a\":1},\"x\":[",
		"pools: expected an array of objects (pools), got an object");
	refused("\"leases\":[{", "\"leases\":{\"a\":1},\"x\":[{",
		"pools[0].leases: expected an array");
	refused("\"quarantined\":[]},{\"page_bytes\":1073741824",
		"\"quarantined\":7},{\"page_bytes\":1073741824",
		"pools[1].quarantined: expected an array of objects (quarantined chunks), got an integer");
	refused("\"node\":1,", "\"node\":\"1\",",
		"pools[0].node: expected an integer from -1 to 1023, got a string");
	refused("\"holder_pid\":999,", "",
		"pools[0].quarantined[0].holder_pid: missing");
	refused("\"uid\":0,", "\"uid\":-1,",
		"pools[0].leases[1].uid: -1 is out of range");
	refused("\"scrub_gbps\":0,", "\"scrub_gbps\":NaN,",
		"pools[2].scrub_gbps: NaN is out of range");
	refused("\"max_bytes\":4294967296,",
		"\"max_bytes\":99999999999999999999,",
		"pools[2].max_bytes: out of range");
	refused("\"comm\":\"minivmm\"", "\"comm\":\"mini\\u0000vmm\"",
		"pools[0].leases[1].comm: the string holds a NUL");
	refused("{\"version\"", "[{\"version\"", "not one JSON object");
	refused("\"pid\":4242,", "\"pid\":4242.0,",
		"pid: expected an integer from 1 to 2147483647, got a number");
}

/* The STATUS table of docs/zvmmd-protocol.md, row by row, as zvmm's. */
static const char *doc_row(const char *doc, const char *want)
{
	const char *at = strstr(doc, want);

	cr_assert_not_null(at, "docs/zvmmd-protocol.md lacks the row\n%s",
			   want);
	return at + strlen(want);
}

static const char *doc_rows(const char *doc,
			    const struct zvmmd_status_object *t,
			    const char *prefix, unsigned int *nr)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		const struct zvmmd_status_row *row = &t->rows[i];
		char path[96], want[512], values[64];
		const char *type = "array";

		snprintf(path, sizeof(path), "%s%s", prefix, row->name);
		snprintf(values, sizeof(values), "of objects");
		if (row->kind == ZVMMD_STATUS_INT) {
			type = "integer";
			snprintf(values, sizeof(values), "%lld to %lld",
				 (long long)row->lo, (long long)row->hi);
		} else if (row->kind == ZVMMD_STATUS_NUMBER) {
			type = "number";
			snprintf(values, sizeof(values), "%.15g to %.15g",
				 row->dlo, row->dhi);
		} else if (row->kind == ZVMMD_STATUS_STRING) {
			type = "string";
			snprintf(values, sizeof(values), "at most %lld bytes",
				 (long long)row->hi);
		}
		snprintf(want, sizeof(want), "\n| `%s` | %s | %s | %s |\n",
			 path, type, values, row->what);
		/* In the table's order: each row after the one before. */
		doc = doc_row(doc, want) - 1;
		(*nr)++;
		if (row->kind == ZVMMD_STATUS_LIST) {
			snprintf(path, sizeof(path), "%s%s[].", prefix,
				 row->name);
			doc = doc_rows(doc, row->list, path, nr);
		}
	}
	return doc;
}

Test(pool_status, protocol_doc_has_the_schema)
{
	char *doc = test_slurp("docs/zvmmd-protocol.md");
	const char *table = strstr(doc, "#### `STATUS_OK`'s members"), *end;
	unsigned int nr = 0, lines = 0;

	cr_assert_not_null(table);
	end = strstr(table, "\n### ");
	cr_assert_not_null(end);
	doc_rows(table, &zvmmd_status_schema, "", &nr);
	/* And no row the schema lacks. */
	for (const char *p = table; (p = strstr(p, "\n| `")) && p < end; p++)
		lines++;
	cr_assert_eq(lines, nr, "%u rows in the docs, %u in lib/zvmmd_status.h",
		     lines, nr);
	free(doc);
}
