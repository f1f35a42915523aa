// SPDX-License-Identifier: MIT
/*
 * `zvmm pool status`: what zvmmd holds, per page size and node (zero,
 * being filled, leased, quarantined, its fill rate) and each lease, from
 * the daemon's STATUS message (docs/zvmmd-protocol.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "../lib/log.h"
#include "../lib/zvmmd_client.h"
#include "../lib/zvmmd_status.h"
#include "cli.h"

static const struct cli_verb pool_verb = {
	.name = "pool status",
	.accepts = CLI_JSON | CLI_SOCKET,
	.what = "Shows what zvmmd holds for each page size and node: zero (zeroed\n"
		"ahead), filling (being zeroed), leased and quarantined bytes, its fill\n"
		"rate, each lease (pid, command, bytes) and each quarantined chunk\n"
		"with the process still holding it, and what its mount holds beyond\n"
		"all that (unseen), where no scan looks.",
	.texts =
		(const struct cli_text[]){
			{ CLI_JSON,
			  "the daemon's status as JSON ('-': stdout)" },
			{ 0 } },
};

int cmd_pool(int argc, char **argv)
{
	struct cli_args a = { .socket = ZVMMD_DEFAULT_SOCKET };
	static char text[ZVMMD_MSG_MAX];
	struct sockaddr_un sa;
	struct zvmmd_status st;
	char why[512];
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
	if (strlen(a.socket) >= sizeof(sa.sun_path)) {
		pr_err("--socket %s: too long for a unix socket", a.socket);
		return cli_exit_status(-EINVAL);
	}
	ret = zvmmd_client_status(a.socket, text, sizeof(text), why,
				  sizeof(why));
	if (ret) {
		pr_err("%s", why);
		return cli_exit_status(ret);
	}
	/* Read whole before anything is printed, for --json too. */
	ret = zvmmd_status_parse(text, strlen(text), &st, why, sizeof(why));
	if (ret) {
		zvmmd_status_free(&st);
		if (ret == -ENOMEM) {
			pr_err("cannot read zvmmd's status: %s",
			       strerror(-ret));
			return cli_exit_status(ret);
		}
		pr_err("zvmmd at %s sent a status zvmm cannot read: %s",
		       a.socket, why);
		return EXIT_OTHER;
	}
	if (!a.json) {
		zvmmd_status_print(&st, stdout);
		zvmmd_status_free(&st);
		return 0;
	}
	zvmmd_status_free(&st);
	/* The daemon's text as it is: members this zvmm does not know too. */
	jf = strcmp(a.json, "-") ? fopen(a.json, "we") : stdout;
	if (!jf) {
		pr_err("cannot write --json %s: %s", a.json, strerror(errno));
		return EXIT_USAGE;
	}
	fprintf(jf, "%s\n", text);
	if (jf != stdout && fclose(jf)) {
		pr_err("cannot write --json %s: %s", a.json, strerror(errno));
		return EXIT_OTHER;
	}
	return 0;
}
