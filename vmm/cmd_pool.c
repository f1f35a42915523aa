// SPDX-License-Identifier: MIT
/*
 * `zvmm pool status`: what zvmmd holds, per page size and node (clean,
 * being filled, leased, quarantined, its fill rate) and each lease, from
 * the daemon's STATUS message (docs/zvmmd-protocol.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "../lib/log.h"
#include "../lib/size.h"
#include "../service/proto.h"
#include "cli.h"

static const struct cli_verb pool_verb = {
	.name = "pool status",
	.accepts = CLI_JSON | CLI_SOCKET,
	.what = "Shows what zvmmd holds for each page size and node: clean (zeroed\n"
		"ahead), dirty (being filled), leased and quarantined bytes, its fill\n"
		"rate, each lease (pid, command, bytes) and each quarantined chunk\n"
		"with the process still holding it.",
	.texts =
		(const struct cli_text[]){
			{ CLI_JSON,
			  "the daemon's status as JSON ('-': stdout)" },
			{ 0 } },
};

/* Asks zvmmd at @path for its status: the JSON text into @out. */
static int fetch_status(const char *path, char *out, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char buf[ZVMMD_MSG_MAX];
	struct zvmmd_msg m;
	char req[64];
	ssize_t n;
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		pr_err("--socket %s: too long for a unix socket", path);
		return -EINVAL;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		pr_err("cannot reach zvmmd at %s: %s: %s", path, strerror(-ret),
		       ret == -EACCES ?
			       "join its group (usermod -aG zvmm USER)" :
			       "is it running? systemctl start zvmmd.socket");
		if (fd >= 0)
			close(fd);
		return ret == -EACCES ? ret : -ENOENT;
	}
	n = zvmmd_build(req, sizeof(req), ZVMMD_STATUS, NULL, 0);
	if (n < 0 || send(fd, req, (size_t)n, MSG_NOSIGNAL) != n ||
	    (n = recv(fd, buf, sizeof(buf), 0)) <= 0) {
		ret = n < 0 ? -errno : -EPIPE;
		close(fd);
		pr_err("zvmmd at %s did not answer: %s", path, strerror(-ret));
		return ret;
	}
	close(fd);
	ret = zvmmd_parse(buf, (size_t)n, &m);
	if (!ret && m.type == ZVMMD_ERROR) {
		pr_err("zvmmd: %s", m.error.msg);
		return -m.error.err;
	}
	if (ret || m.type != ZVMMD_STATUS_OK) {
		pr_err("zvmmd at %s sent no status: %s", path,
		       ret ? strerror(-ret) : "another message");
		return -EPROTO;
	}
	snprintf(out, len, "%.*s", (int)m.len, (const char *)m.body);
	return 0;
}

static uint64_t num(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ?
		       (uint64_t)json_object_get_int64(v) :
		       0;
}

static const char *str(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ?
		       json_object_get_string(v) :
		       "?";
}

static void print_table(FILE *f, json_object *root)
{
	json_object *pools, *p, *list;
	char a[6][24];

	fprintf(f, "zvmmd %s, pid %llu\n", str(root, "version"),
		(unsigned long long)num(root, "pid"));
	if (!json_object_object_get_ex(root, "pools", &pools))
		return;
	fprintf(f, "%-6s %-5s %-8s %-10s %-10s %-10s %-12s %s\n", "pages",
		"node", "chunk", "clean", "dirty", "leased", "quarantined",
		"fill rate");
	for (size_t i = 0; i < json_object_array_length(pools); i++) {
		long long node;

		p = json_object_array_get_idx(pools, i);
		node = (long long)(int64_t)num(p, "node");
		snprintf(a[5], sizeof(a[5]), "%lld", node);
		fprintf(f, "%-6s %-5s %-8s %-10s %-10s %-10s %-12s %.1f GB/s\n",
			size_label(num(p, "page_bytes"), a[0], sizeof(a[0])),
			node < 0 ? "any" : a[5],
			size_human(num(p, "chunk_bytes"), a[1], sizeof(a[1])),
			size_human(num(p, "clean_bytes"), a[2], sizeof(a[2])),
			size_human(num(p, "dirty_bytes"), a[3], sizeof(a[3])),
			size_human(num(p, "leased_bytes"), a[4], sizeof(a[4])),
			size_human(num(p, "quarantined_bytes"), a[5],
				   sizeof(a[5])),
			json_object_get_double(
				json_object_object_get(p, "scrub_gbps")));
		if (json_object_object_get_ex(p, "leases", &list))
			for (size_t k = 0; k < json_object_array_length(list);
			     k++) {
				json_object *l =
					json_object_array_get_idx(list, k);

				fprintf(f,
					"  lease %llu: pid %llu (%s), uid %llu, %s\n",
					(unsigned long long)num(l, "id"),
					(unsigned long long)num(l, "pid"),
					str(l, "comm"),
					(unsigned long long)num(l, "uid"),
					size_human(num(l, "bytes"), a[0],
						   sizeof(a[0])));
			}
		if (json_object_object_get_ex(p, "quarantined", &list))
			for (size_t k = 0; k < json_object_array_length(list);
			     k++) {
				json_object *q =
					json_object_array_get_idx(list, k);

				fprintf(f,
					"  quarantined %s: %s, held by pid %lld (%s)\n",
					str(q, "chunk"),
					size_human(num(q, "bytes"), a[0],
						   sizeof(a[0])),
					(long long)(int64_t)num(q,
								"holder_pid"),
					str(q, "holder_comm"));
			}
	}
}

int cmd_pool(int argc, char **argv)
{
	struct cli_args a = { .socket = "/run/zvmm/zvmmd.sock" };
	static char text[ZVMMD_MSG_MAX];
	json_object *root;
	FILE *jf;
	int ret;

	if (argc < 2 || strcmp(argv[1], "status")) {
		if (argc >= 2 &&
		    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			cli_usage(&pool_verb, stdout);
			return 0;
		}
		pr_err("pool: give a subcommand: zvmm pool status [--json FILE|-]");
		return EXIT_USAGE;
	}
	ret = cli_parse(&pool_verb, argc - 1, argv + 1, &a);
	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	ret = fetch_status(a.socket, text, sizeof(text));
	if (ret)
		return cli_exit_status(ret);
	if (a.json) {
		jf = strcmp(a.json, "-") ? fopen(a.json, "we") : stdout;
		if (!jf) {
			pr_err("cannot write --json %s: %s", a.json,
			       strerror(errno));
			return EXIT_USAGE;
		}
		fprintf(jf, "%s\n", text);
		if (jf != stdout)
			fclose(jf);
		return 0;
	}
	root = json_tokener_parse(text);
	if (!root) {
		pr_err("zvmmd sent a status that is not JSON");
		return EXIT_OTHER;
	}
	print_table(stdout, root);
	json_object_put(root);
	return 0;
}
