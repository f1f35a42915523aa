#!/usr/bin/env bash
# New users in a row: LAUNCHES launches of `zvmm prezero --pool` on a
# poisoned pool of GIB GiB of PAGE pages, each with an empty calibration
# cache (a fresh ZVMM_CACHE_DIR: no profile, backend = auto measures).
#
# HOG=1 (the default): each launch picks its backend while a CPU hog
# spins on another CPU (a busy loop pinned there with taskset, ended by
# its pid as soon as the launch is done), as a new user's machine is
# seldom idle; the backend it picked is then timed quietly, and right
# after it the best backend for that memory (every backend that runs
# here named in the policy, BEST_REPS times each, the best median). A
# launch passes when the backend it picked scrubs at >= PASS (0.85) x
# that best backend's scrub (each the median of TIME_REPS scrubs, taken
# in turn): the host's load moves both alike (on the shared 2-core Xeon
# here the same scrub ran at 42 and at 11 GB/s within minutes), so each
# launch is compared with its neighbour. HOG=0: the launch picks on a
# quiet machine, and its own scrub is compared with the best's next.
#
# Writes OUT/newuser.tsv (launch, backend, how it was picked, GB/s, the
# best backend's GB/s right after, ratio, the launch's wall ms, the ms it
# spent measuring) and prints a Markdown table. Hugepage counts, the
# mount, the pool file and the hog are put back on exit.
#
# Usage (root): bench/newuser.sh   (the last section of bench/suite.sh).
# Environment: OUT, GIB (4), PAGE (2M), LAUNCHES (10), BEST_REPS (3),
# HOG (1), HOG_CPU (the last CPU this script may run on), PASS (0.85),
# TIME_REPS (3), ZVMM, POISON.
set -euo pipefail
cd "$(dirname "$0")/.."

ZVMM=${ZVMM:-build/zvmm}
POISON=${POISON:-build/bench/poison}
OUT=${OUT:-bench/results}
GIB=${GIB:-4}
PAGE=${PAGE:-2M}
LAUNCHES=${LAUNCHES:-10}
BEST_REPS=${BEST_REPS:-3}
HOG=${HOG:-1}
TIME_REPS=${TIME_REPS:-3}
PASS=${PASS:-0.85}
HOG_CPU=${HOG_CPU:-$(taskset -pc $$ | sed 's/.*: *//; s/.*[,-]//')}
hog_pid=

die() {
	echo "newuser.sh: $*" >&2
	exit "${2:-1}"
}
[ "$(id -u)" = 0 ] || die "run as root: it reserves hugepages and gives them back" 3
[ -x "$ZVMM" ] && [ -x "$POISON" ] || die "run 'make $ZVMM $POISON' first" 2
[ "$HOG" = 0 ] || command -v taskset >/dev/null || die "HOG=1 needs taskset" 2

pbytes=$([ "$PAGE" = 1G ] && echo $((1 << 30)) || echo $((2 << 20)))
nr=/sys/kernel/mm/hugepages/hugepages-$((pbytes >> 10))kB/nr_hugepages
free=${nr%nr_hugepages}free_hugepages
saved=$(cat "$nr")
MNT=$(mktemp -d /tmp/zvmm-newuser.XXXXXX)
export ZVMM_STATE_DIR=$MNT.state
J=$MNT.json

# hog_start / hog_stop: a busy loop pinned on HOG_CPU, ended by its pid.
hog_start() {
	taskset -c "$HOG_CPU" bash -c 'while :; do :; done' &
	hog_pid=$!
}
hog_stop() {
	[ -n "$hog_pid" ] || return 0
	kill "$hog_pid" 2>/dev/null
	wait "$hog_pid" 2>/dev/null || true
	hog_pid=
}

cleanup() {
	trap - EXIT INT TERM
	set +e
	hog_stop
	rm -f "$MNT/pool" "$J" "$MNT.log"
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
# WALL_MS gets the milliseconds of the zvmm process, MEASURE_MS those it
# said (--verbose) it spent measuring the backends ("-": none), HOW how
# the pick was decided.
launch() {
	local cache=$1 t0 log=$MNT.log
	shift
	rm -rf "$ZVMM_STATE_DIR"
	"$POISON" "$MNT/pool" $((GIB << 30))
	t0=$EPOCHREALTIME
	ZVMM_CACHE_DIR=$cache "$ZVMM" prezero --mem "${GIB}G" \
		--hugepages "$PAGE" --pool "$MNT/pool" --quiet --json "$J" \
		--verbose "$@" >/dev/null 2>"$log"
	WALL_MS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", (b - a) * 1000}')
	MEASURE_MS=$(sed -n 's/.*backend = auto: measured in \([0-9.]*\) ms.*/\1/p' "$log" | head -1)
	HOW=$(sed -n 's/.*backend = auto: measured in .*decided by \([a-z_]*\).*/\1/p' "$log" | head -1)
	rm -f "$log"
}

median() { sort -g | awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : 0)}'; }

# Untimed: the first touch of memory the host reclaimed is slow.
launch "$MNT.cache" --set zeroing.backend=memset
best=0
best_name=none
rates=""
# Each backend BEST_REPS times, in turn with the others (one after the
# other, the host's drift over a minute would rank them): the medians.
backends=$("$ZVMM" backends | awk '$2 == "yes" {print $1}')
declare -A got
for _ in $(seq "$BEST_REPS"); do
	for b in $backends; do
		launch "$MNT.cache" --set zeroing.backend="$b"
		got[$b]+="$(jget gbps) "
	done
done
for b in $backends; do
	g=$(echo ${got[$b]} | tr ' ' '\n' | median)
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
	echo "# hog	$([ "$HOG" = 0 ] && echo none || echo "a busy loop on CPU $HOG_CPU while each launch picks")"
	printf 'launch\tbackend\tfrom\tdecided\tgbps\tbest_gbps\tratio\twall_ms\tmeasure_ms\n'
} >"$tsv"
pass=0
for i in $(seq "$LAUNCHES"); do
	rm -rf "$MNT.cache"
	[ "$HOG" = 0 ] || hog_start
	launch "$MNT.cache"
	hog_stop
	g=$(jget gbps)
	b=$(jget backend)
	from=$(jget backend_from)
	wall=$WALL_MS
	ms=${MEASURE_MS:--}
	how=${HOW:--}
	# Picked under the hog: its own scrub was slowed too. Timed quietly,
	# TIME_REPS times in turn with the best one, the medians compared:
	# one scrub of the same backend here read 16.7 GB/s and the next 28.
	if [ "$HOG" != 0 ]; then
		gs="" refs=""
		for _ in $(seq "$TIME_REPS"); do
			launch "$MNT.ref" --set zeroing.backend="$b"
			gs+="$(jget gbps) "
			launch "$MNT.ref" --set zeroing.backend="$best_name"
			refs+="$(jget gbps) "
		done
		g=$(echo $gs | tr ' ' '\n' | median)
		ref=$(echo $refs | tr ' ' '\n' | median)
	else
		launch "$MNT.ref" --set zeroing.backend="$best_name"
		ref=$(jget gbps)
	fi
	r=$(awk -v a="$g" -v b="$ref" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
	awk -v r="$r" -v p="$PASS" 'BEGIN {exit !(r >= p)}' && pass=$((pass + 1))
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$b" "$from" \
		"$how" "$g" "$ref" "$r" "$wall" "$ms" >>"$tsv"
done
echo "# passed	$pass of $LAUNCHES at >= ${PASS}x" >>"$tsv"

echo "| launch | backend chosen | decided by | GB/s$([ "$HOG" = 0 ] || echo ' (quiet)') | $best_name next | ratio | launch ms | measuring ms |"
echo "|---|---|---|---|---|---|---|---|"
awk -F'\t' '!/^#/ && $1 != "launch" {printf "| %s | %s (%s) | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}' "$tsv"
echo
echo "$pass of $LAUNCHES new-user launches at >= ${PASS}x the best backend ($GIB GiB $PAGE pool; $([ "$HOG" = 0 ] && echo "picked on a quiet machine" || echo "picked under a busy loop on CPU $HOG_CPU, timed quietly"); best of all backends: $best_name at $best GB/s, median of $BEST_REPS;$rates)"
[ "$pass" = "$LAUNCHES" ]
