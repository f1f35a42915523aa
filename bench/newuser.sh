#!/usr/bin/env bash
# New users in a row: LAUNCHES launches of `zvmm prezero --pool` on a
# poisoned pool of GIB GiB of PAGE pages, each with an empty calibration
# cache (a fresh ZVMM_CACHE_DIR: no profile, backend = auto measures),
# against the best backend for that memory in the same run (every backend
# that runs here named in the policy, BEST_REPS times each, the best
# median). A launch passes when its scrub runs at >= 0.9x that backend's
# scrub run right after it: the host's load moves both alike (on the
# shared 2-core Xeon here the same scrub ran at 42 and at 11 GB/s within
# minutes), so each launch is compared with its neighbour.
#
# Writes OUT/newuser.tsv (launch, backend, GB/s, the best backend's GB/s
# right after, ratio, the launch's wall ms) and prints a Markdown table.
# Hugepage counts, the mount and the pool file are put back on exit.
#
# Usage (root): bench/newuser.sh   (the last section of bench/suite.sh). Environment: OUT,
# GIB (4), PAGE (2M), LAUNCHES (10), BEST_REPS (3), ZVMM, POISON.
set -euo pipefail
cd "$(dirname "$0")/.."

ZVMM=${ZVMM:-build/zvmm}
POISON=${POISON:-build/bench/poison}
OUT=${OUT:-bench/results}
GIB=${GIB:-4}
PAGE=${PAGE:-2M}
LAUNCHES=${LAUNCHES:-10}
BEST_REPS=${BEST_REPS:-3}

die() {
	echo "newuser.sh: $*" >&2
	exit "${2:-1}"
}
[ "$(id -u)" = 0 ] || die "run as root: it reserves hugepages and gives them back" 3
[ -x "$ZVMM" ] && [ -x "$POISON" ] || die "run 'make $ZVMM $POISON' first" 2

pbytes=$([ "$PAGE" = 1G ] && echo $((1 << 30)) || echo $((2 << 20)))
nr=/sys/kernel/mm/hugepages/hugepages-$((pbytes >> 10))kB/nr_hugepages
free=${nr%nr_hugepages}free_hugepages
saved=$(cat "$nr")
MNT=$(mktemp -d /tmp/zvmm-newuser.XXXXXX)
export ZVMM_STATE_DIR=$MNT.state
J=$MNT.json

cleanup() {
	trap - EXIT INT TERM
	set +e
	rm -f "$MNT/pool" "$J"
	umount "$MNT" 2>/dev/null
	rmdir "$MNT" 2>/dev/null
	rm -rf "$ZVMM_STATE_DIR" "$MNT.cache" "$MNT.ref"
	echo "$saved" >"$nr"
	return 0
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

n=$(((GIB << 30) / pbytes))
echo $((saved + n)) >"$nr"
[ "$(cat "$free")" -ge "$n" ] || die "cannot reserve $n pages of $PAGE" 3
mount -t hugetlbfs -o pagesize="$PAGE" none "$MNT"
mkdir -p "$OUT"

# jget KEY: the first number or string of KEY in the JSON report
jget() { grep -o "\"$1\": *\"\{0,1\}[^,\"}]*" "$J" | head -1 | sed 's/.*: *"\{0,1\}//'; }

# launch CACHE_DIR [ARGS...]: one prezero of the freshly poisoned pool
# WALL_MS gets the milliseconds of the zvmm process.
launch() {
	local cache=$1 t0
	shift
	rm -rf "$ZVMM_STATE_DIR"
	"$POISON" "$MNT/pool" $((GIB << 30))
	t0=$EPOCHREALTIME
	ZVMM_CACHE_DIR=$cache "$ZVMM" prezero --mem "${GIB}G" \
		--hugepages "$PAGE" --pool "$MNT/pool" --quiet --json "$J" \
		"$@" >/dev/null
	WALL_MS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", (b - a) * 1000}')
}

median() { sort -g | awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : 0)}'; }

# Untimed: the first touch of memory the host reclaimed is slow.
launch "$MNT.cache" --set zeroing.backend=memset
best=0
best_name=none
rates=""
for b in $("$ZVMM" backends | awk '$2 == "yes" {print $1}'); do
	g=$(for _ in $(seq "$BEST_REPS"); do
		launch "$MNT.cache" --set zeroing.backend="$b"
		jget gbps
	done | median)
	rates+=" $b=$g"
	if awk -v a="$g" -v b="$best" 'BEGIN {exit !(a > b)}'; then
		best=$g
		best_name=$b
	fi
done

tsv=$OUT/newuser.tsv
{
	echo "# cpu	$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "# zvmm	$(git describe --always --dirty 2>/dev/null || echo unknown)"
	echo "# pool	$GIB GiB of $PAGE pages, poisoned before each launch"
	echo "# best	$best_name $best GB/s (median of $BEST_REPS; all:$rates)"
	printf 'launch\tbackend\tfrom\tgbps\tbest_gbps\tratio\twall_ms\n'
} >"$tsv"
pass=0
for i in $(seq "$LAUNCHES"); do
	rm -rf "$MNT.cache"
	launch "$MNT.cache"
	g=$(jget gbps)
	b=$(jget backend)
	from=$(jget backend_from)
	wall=$WALL_MS
	launch "$MNT.ref" --set zeroing.backend="$best_name"
	ref=$(jget gbps)
	r=$(awk -v a="$g" -v b="$ref" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
	awk -v r="$r" 'BEGIN {exit !(r >= 0.9)}' && pass=$((pass + 1))
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$b" "$from" "$g" \
		"$ref" "$r" "$wall" >>"$tsv"
done
echo "# passed	$pass of $LAUNCHES at >= 0.9x" >>"$tsv"

echo "| launch | backend chosen | prezero GB/s | $best_name next | ratio | launch ms |"
echo "|---|---|---|---|---|---|"
awk -F'\t' '!/^#/ && $1 != "launch" {printf "| %s | %s (%s) | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7}' "$tsv"
echo
echo "$pass of $LAUNCHES new-user launches at >= 0.9x the best backend ($GIB GiB $PAGE pool; best of all backends: $best_name at $best GB/s, median of $BEST_REPS;$rates)"
[ "$pass" = "$LAUNCHES" ]
