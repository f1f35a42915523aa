#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The host as the tests found it, and as they left it:
#
#   host-state.sh save FILE     before the tests
#   host-state.sh check FILE    after: exit 1, naming each, when anything
#                               the tests made is still there
#
# Checked: zvmm and zvmmd processes, hugetlbfs mounts and entries under
# /tmp/zvmm-test*, every hugepage pool's count, and every file under
# /var/lib/zvmm and /var/cache/zvmm (the host's own state and cache,
# which tests must never write: they use ZVMM_STATE_DIR and
# ZVMM_CACHE_DIR). Only processes of the tests are looked at: those run
# from this tree or from /tmp/zvmm-test*, or given a path there. What check finds it then removes, so a failed run
# does not leave the host worse than it says.
set -uo pipefail

PREFIX=/tmp/zvmm-test
HOST_DIRS=(/var/lib/zvmm /var/cache/zvmm)
TREE=$(cd "$(dirname "$0")/.." && pwd)

# A zvmm or zvmmd of the tests: run from this tree or a test's copy, or
# given a test's path; another on this host is none of the tests'.
ours() {
	local exe args
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	args=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)
	[[ $exe == "$TREE"/* || $exe == "$PREFIX"* || $args == *"$PREFIX"* ]]
}

snapshot() {
	local p d
	for p in /sys/kernel/mm/hugepages/hugepages-*/nr_hugepages; do
		[ -e "$p" ] && echo "pool $p $(cat "$p")"
	done
	for p in $(pgrep -x 'zvmmd|zvmm'); do
		ours "$p" && echo "proc $p"
	done
	awk -v pre="$PREFIX" '$3 == "hugetlbfs" && index($2, pre) == 1 {
		print "mount " $2 }' /proc/mounts
	for p in "$PREFIX"*; do
		[ -e "$p" ] && echo "tmp $p"
	done
	for d in "${HOST_DIRS[@]}"; do
		if [ -e "$d" ]; then
			find "$d" -printf 'host %p %y %s %T@\n'
		fi
	done
}

case "${1:-} ${2:-}" in
save\ ?*)
	snapshot | sort >"$2"
	exit 0
	;;
check\ ?*) ;;
*)
	echo "usage: $0 save|check FILE" >&2
	exit 2
	;;
esac

before=$2
now=$(snapshot | sort)
# Lines only in now: made by the tests; only in before: changed or gone.
made=$(comm -13 "$before" <(echo "$now"))
gone=$(comm -23 "$before" <(echo "$now"))
[ -z "$made" ] && [ -z "$gone" ] && exit 0

echo "host-state: the tests left the host changed:" >&2
while read -r kind what rest; do
	case $kind in
	pool) echo "  $what is $rest, was $(awk -v p="$what" '$2 == p {print $3}' "$before")" ;;
	proc) echo "  $(ps -o pid=,args= -p "$what" 2>/dev/null || echo "$what") is still running" ;;
	mount) echo "  hugetlbfs is still mounted at $what" ;;
	tmp) echo "  $what is left" ;;
	host) echo "  $what was written" ;;
	esac
done <<<"$made" >&2
while read -r kind what rest; do
	[ "$kind" = host ] && ! grep -q "^host $what " <<<"$made" &&
		echo "  $what was removed" >&2
done <<<"$gone"

# Put back what can be put back: the newest first, mounts before their
# directories, pools last (a mount's files hold hugepages).
while read -r kind what _; do
	[ "$kind" = proc ] && kill -TERM "$what" 2>/dev/null
done <<<"$made"
sleep 0.5
while read -r kind what _; do
	[ "$kind" = proc ] && kill -KILL "$what" 2>/dev/null
done <<<"$made"
while read -r kind what _; do
	[ "$kind" = mount ] && { rm -f "$what"/* 2>/dev/null; umount -l "$what"; }
done <<<"$made"
while read -r kind what _; do
	[ "$kind" = tmp ] && rm -rf "$what"
done <<<"$made"
while read -r kind what rest; do
	[ "$kind" = host ] && ! grep -q "^host $what " "$before" &&
		rm -rf "$what"
done <<<"$made"
while read -r kind what count; do
	[ "$kind" = pool ] && echo "$count" >"$what"
done <"$before"
echo "host-state: removed what the tests left; the run fails" >&2
exit 1
