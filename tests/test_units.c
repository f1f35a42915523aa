// SPDX-License-Identifier: MIT
/*
 * zvmmd's systemd units as shipped: the service holds each hardening
 * directive zvmmd(8) SYSTEMD describes, with the capability set it needs
 * and no other, every directive of the service's [Service] and the
 * socket's [Socket] has its reason in a comment above it, and none is
 * given twice (a later one would undo the first); the Debian package
 * enables and starts neither unit. The units themselves are read, so a
 * later edit cannot drop one of these silently.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define SERVICE "dist/systemd/zvmmd.service"
#define SOCKET "dist/systemd/zvmmd.socket"

/*
 * The service's hardening, each line as it must stand. Dropping one, or
 * changing its value, fails; zvmmd(8) SYSTEMD and the comments in the
 * unit say why each is there.
 */
static const char *const hardening[] = {
	"CapabilityBoundingSet=CAP_SYS_ADMIN CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_CHOWN",
	"AmbientCapabilities=",
	"NoNewPrivileges=yes",
	"ProtectSystem=strict",
	"ReadWritePaths=/run/zvmm",
	"PrivateMounts=yes",
	"PrivateTmp=yes",
	"ProtectHome=yes",
	"PrivateDevices=yes",
	"ProtectKernelTunables=yes",
	"ProtectKernelModules=yes",
	"ProtectKernelLogs=yes",
	"ProtectControlGroups=yes",
	"ProtectClock=yes",
	"ProtectHostname=yes",
	"ProtectProc=default",
	"ProcSubset=all",
	"PrivateNetwork=yes",
	"RestrictAddressFamilies=AF_UNIX",
	"RestrictNamespaces=yes",
	"RestrictRealtime=yes",
	"RestrictSUIDSGID=yes",
	"LockPersonality=yes",
	"MemoryDenyWriteExecute=yes",
	"UMask=0077",
	"SystemCallArchitectures=native",
	"LimitNOFILE=524288",
	"CPUWeight=1",
};

/* The socket unit's: who may connect, and the directory it makes. */
static const char *const socket_lines[] = {
	"ListenSequentialPacket=/run/zvmm/zvmmd.sock",
	"SocketMode=0660",
	"SocketUser=root",
	"SocketGroup=zvmm",
	"DirectoryMode=0755",
};

/* Directives that add up rather than replace: given on several lines. */
static bool repeatable(const char *key, size_t len)
{
	return len == strlen("SystemCallFilter") &&
	       !strncmp(key, "SystemCallFilter", len);
}

/* @text's line that is @line exactly, or NULL. */
static const char *find_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p += !!p)
		if (!strncmp(p, line, n) && (p[n] == '\n' || !p[n]))
			return p;
	return NULL;
}

/*
 * Reads section @section of @text (@path): every directive line right
 * under a comment or under a line of its own key (SystemCallFilter=
 * wraps), and no key twice unless it adds up. Returns how many
 * directives it has, or -1 with the first fault, naming its line, in
 * @err (@len bytes).
 */
static int check_reasoned(const char *path, const char *text,
			  const char *section, char *err, size_t len)
{
	char keys[64][48], prev[256] = "", head[64];
	const char *p;
	int nkeys = 0, n = 0, lineno = 1;
	bool in = false;

	snprintf(head, sizeof(head), "[%s]", section);
	for (p = text; *p; lineno++) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p), klen;
		char line[256];
		const char *eq;

		snprintf(line, sizeof(line), "%.*s", (int)ll, p);
		p += ll + !!nl;
		if (line[0] == '[')
			in = !strcmp(line, head);
		if (line[0] == '[' || !in || !line[0] || line[0] == '#' ||
		    line[0] == ';') {
			snprintf(prev, sizeof(prev), "%s", line);
			continue;
		}
		eq = strchr(line, '=');
		if (!eq) {
			snprintf(err, len, "%s:%d: not a directive: %s", path,
				 lineno, line);
			return -1;
		}
		klen = (size_t)(eq - line);
		n++;
		if (prev[0] != '#' && prev[0] != ';' &&
		    (!repeatable(line, klen) ||
		     strncmp(prev, line, klen + 1))) {
			snprintf(err, len,
				 "%s:%d: %s has no comment above it saying why",
				 path, lineno, line);
			return -1;
		}
		for (int i = 0; i < nkeys; i++)
			if (strlen(keys[i]) == klen &&
			    !strncmp(keys[i], line, klen) &&
			    !repeatable(line, klen)) {
				snprintf(
					err, len,
					"%s:%d: %.*s= is given twice: the later one undoes the first",
					path, lineno, (int)klen, line);
				return -1;
			}
		if (nkeys < 64)
			snprintf(keys[nkeys++], sizeof(keys[0]), "%.*s",
				 (int)klen, line);
		snprintf(prev, sizeof(prev), "%s", line);
	}
	return n;
}

Test(units, the_service_holds_its_hardening)
{
	char *unit = test_slurp(SERVICE);

	for (size_t i = 0; i < ARRAY_LEN(hardening); i++)
		cr_assert_not_null(find_line(unit, hardening[i]),
				   "%s lacks the line %s", SERVICE,
				   hardening[i]);
	/* Socket activation: the socket is systemd's, made root:zvmm. */
	cr_assert_not_null(find_line(unit, "Requires=zvmmd.socket"));
	free(unit);
}

Test(units, every_directive_has_its_reason)
{
	char *service = test_slurp(SERVICE), *socket = test_slurp(SOCKET);
	char err[512] = "";
	int n;

	n = check_reasoned(SERVICE, service, "Service", err, sizeof(err));
	cr_assert_gt(n, (int)ARRAY_LEN(hardening), "%s",
		     n < 0 ? err : "too few directives in [Service]");
	n = check_reasoned(SOCKET, socket, "Socket", err, sizeof(err));
	cr_assert_geq(n, (int)ARRAY_LEN(socket_lines), "%s",
		      n < 0 ? err : "too few directives in [Socket]");
	for (size_t i = 0; i < ARRAY_LEN(socket_lines); i++)
		cr_assert_not_null(find_line(socket, socket_lines[i]),
				   "%s lacks the line %s", SOCKET,
				   socket_lines[i]);
	free(service);
	free(socket);
}

/*
 * The reading above fails where it should: a directive without its
 * comment (under another, or under a blank line), one given twice,
 * together or apart; and passes lines that add up.
 */
Test(units, the_checks_catch_what_they_are_for)
{
	static const char *const bad[] = {
		"[Service]\n# why\nProtectSystem=strict\nPrivateTmp=yes\n",
		"[Service]\n# why\nProtectSystem=strict\n\nPrivateTmp=yes\n",
		"[Service]\n# why\nProtectSystem=strict\nProtectSystem=\n",
		"[Service]\n# why\nProtectSystem=strict\n# why\nProtectSystem=\n",
		"[Service]\n# why\nType=exec\n[Install]\n[Service]\nUMask=0077\n",
	};
	char err[512];

	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		cr_assert_eq(check_reasoned("bad", bad[i], "Service", err,
					    sizeof(err)),
			     -1, "a faulty unit passed: %s", bad[i]);
	cr_assert_eq(
		check_reasoned("good",
			       "[Service]\n# why\nSystemCallFilter=a\n"
			       "SystemCallFilter=b\n[Install]\nWantedBy=x\n",
			       "Service", err, sizeof(err)),
		2, "%s", err);
}

/*
 * Installing the package enables and starts nothing (zvmmd(8), SYSTEMD):
 * filling hugepages is the operator's decision, not dpkg's. An upgrade
 * restarts only what runs, and removal stops both units.
 */
Test(units, the_debian_package_starts_nothing)
{
	char *rules = test_slurp("debian/rules");
	char *prerm = test_slurp("debian/zvmm.prerm");

	cr_assert_not_null(
		find_line(rules, "\tdh_installsystemd --no-enable --no-start "
				 "--restart-after-upgrade"),
		"debian/rules: dh_installsystemd would enable or start zvmmd");
	cr_assert_not_null(
		strstr(prerm,
		       "deb-systemd-invoke stop zvmmd.socket zvmmd.service"),
		"debian/zvmm.prerm does not stop zvmmd on removal");
	free(rules);
	free(prerm);
}
