#!/usr/bin/env bash
# The state directory stays bounded (zero_record_write(), docs/DESIGN.md
# "Pools: the lock and the record"): for DURATION seconds, tenants run
# over a rotating set of POOLS pool files of one 2 MiB page in a hugetlbfs
# mount of the script's own, JOBS at a time: `zvmm prezero --pool P --set
# pool.on_exit=scrub`, each leaving P's state record in a state directory
# of the script's own ($ZVMM_STATE_DIR). After each group (a tenant per
# pool file), ROTATE pool files are removed and as many new ones named in
# their place, for the next group to create. After every group the
# records must be exactly those of the pool files there are (pool-DEV-
# INODE.state of each): one per pool file, none of a removed one. At the
# end it prints the tenants run, the pool files removed, the records and
# the pool files there are, and the most records seen after a group, and
# exits 1 if the records ever differed from the pool files.
#
# Needs no /dev/kvm. Everything goes under a mktemp -d directory in /tmp;
# the hugepages it raises are put back.
#
# Usage (root): bench/record-soak.sh
# Environment: DURATION=600 (seconds), POOLS=16, ROTATE=4, JOBS=4, ZVMM.
set -euo pipefail
cd "$(dirname "$0")/.."

ZVMM=${ZVMM:-build/zvmm}
DURATION=${DURATION:-600}
POOLS=${POOLS:-16}
ROTATE=${ROTATE:-4}
JOBS=${JOBS:-4}

[ "$(id -u)" = 0 ] || { echo "record-soak.sh: run as root (hugetlbfs mount, hugepages)" >&2; exit 3; }
[ -x "$ZVMM" ] || { echo "record-soak.sh: $ZVMM is not built: run make" >&2; exit 2; }
[ "$ROTATE" -le "$POOLS" ] || { echo "record-soak.sh: ROTATE ($ROTATE) is more than POOLS ($POOLS)" >&2; exit 2; }

nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
[ -w "$nr" ] || { echo "record-soak.sh: no 2 MiB hugetlb pool ($nr)" >&2; exit 3; }
saved=$(cat "$nr")
work=$(mktemp -d /tmp/rec-soak.XXXXXX)
mnt=$work/mnt
export ZVMM_STATE_DIR=$work/state ZVMM_CACHE_DIR=$work/cache
cleanup() {
	rm -f "$mnt"/pool-* 2>/dev/null || true
	umount "$mnt" 2>/dev/null || true
	rm -rf "$work"
	echo "$saved" >"$nr"
}
trap cleanup EXIT INT TERM

# Every pool file holds its page between tenants; a new one takes a page
# while its first tenant runs.
echo $((saved + POOLS + JOBS)) >"$nr"
mkdir -p "$mnt"
mount -t hugetlbfs -o pagesize=2M,mode=0700 none "$mnt"

# tenant POOL: one launch, on_exit = scrub; its record is written at exit.
tenant() {
	local log=$LOGS/${1##*/}.log

	"$ZVMM" prezero --mem 2M --pool "$1" --set pool.on_exit=scrub \
		--set zeroing.backend=memset --set zeroing.workers=1 \
		--quiet >"$log" 2>&1 || { cat "$log" >&2; return 1; }
}
export -f tenant
export ZVMM LOGS=$work/log
mkdir -p "$LOGS"

live=()
gen=0
for ((i = 0; i < POOLS; i++)); do
	live+=("$mnt/pool-$gen")
	gen=$((gen + 1))
done

tenants=0 removed=0 groups=0 most=0 bad=0
# The records there should be (one per pool file), and those there are.
want() { for p in "${live[@]}"; do stat -c 'pool-%d-%i.state' "$p"; done | sort; }
have() { find "$ZVMM_STATE_DIR" -maxdepth 1 -name 'pool-*.state' -printf '%f\n' | sort; }

end=$((SECONDS + DURATION))
while :; do
	# shellcheck disable=SC2016 # $1 is the inner shell's
	printf '%s\n' "${live[@]}" | xargs -P "$JOBS" -I{} bash -c 'tenant "$1"' _ {} ||
		{ echo "record-soak.sh: a tenant failed" >&2; exit 1; }
	tenants=$((tenants + ${#live[@]}))
	groups=$((groups + 1))
	rm -f "$LOGS"/*.log
	n=$(have | wc -l)
	[ "$n" -gt "$most" ] && most=$n
	if [ "$(want)" != "$(have)" ]; then
		bad=$((bad + 1))
		echo "record-soak.sh: group $groups: $n records for ${#live[@]} pool files:" >&2
		diff <(want) <(have) >&2 || true
	fi
	[ "$SECONDS" -lt "$end" ] || break
	# Between groups: ROTATE pool files removed, new names in their place.
	for ((i = 0; i < ROTATE; i++)); do
		k=$((RANDOM % ${#live[@]}))
		rm -f "${live[$k]}"
		live[k]=$mnt/pool-$gen
		gen=$((gen + 1))
		removed=$((removed + 1))
	done
done

n=$(have | wc -l)
files=$(find "$mnt" -maxdepth 1 -name 'pool-*' -type f | wc -l)
echo "record-soak: ${DURATION} s, $groups groups, $tenants tenants, $removed pool files removed"
echo "record-soak: $n records, $files pool files, at most $most records after a group"
if [ "$bad" -gt 0 ] || [ "$n" -ne "$files" ]; then
	echo "record-soak: FAIL: the records differed from the pool files after $bad of $groups groups" >&2
	exit 1
fi
echo "record-soak: ok: one record per pool file"
