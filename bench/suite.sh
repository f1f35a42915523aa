#!/usr/bin/env bash
# zvmm's benchmark suite: zvmm against its peers on this machine, in one
# run, with the same memory and the same guest image (touch.elf):
#
#  1. the backend table of `zvmm bench` (extents 4K to 1G) with the
#     kernel's hugetlb fault zeroing (kernel:demand, kernel:populate);
#  2. launch to ready (exec to the guest's ZVMM-BOOT line, written by its
#     first instructions) and to the
#     guest's report, at SIZES GiB with PAGES pages, for zvmm prezero on
#     fresh memory, zvmm prezero/demand/hybrid on a warm poisoned pool,
#     a zvmm relaunch after on_exit=scrub, and QEMU (microvm, memfd
#     hugetlb backend) with prealloc=on (prealloc-threads = zvmm's
#     workers) and prealloc=off;
#  3. demand-fault latency against chunk size while hybrid background
#     work runs (the guest touches top down, background clears bottom
#     up), with the background's own throughput;
#  4. zvmm's own time and RSS at the largest size, and its launch phases
#     apart from the kernel's memslot creation;
#  5. with 1 GiB pages, the first and the second launch of a user with no
#     calibration profile (PROFILE_GIB, a poisoned pool, backend = auto);
#  6. ten new users in a row (bench/newuser.sh): each launch without a
#     profile picks its backend under a busy loop on another CPU, and the
#     pick scrubs a poisoned NEWUSER_GIB pool of 2 MiB pages, quietly, at
#     >= 0.85x the best backend for that memory in the same run;
#  7. the launch storm (bench/storm.sh): zvmmd's leases against warm pools
#     and QEMU prealloc, and a guest's touch rate while zvmmd fills;
#     without a usable /dev/kvm its memory side, libzvmm tenants leasing
#     from zvmmd and opening a warm pool against the kernel's own faults.
#  8. QEMU, unmodified, on 8 GiB through `zvmm exec` (a clean record, a
#     zvmmd lease) against QEMU's prealloc=on and the kernel's zeroing at
#     first touch (bench/exec.sh): ready and full touch; under TCG where
#     there is no usable /dev/kvm (reported, judging nothing).
#
# On the page sizes this machine has: 1G only where the kernel has a
# 1 GiB hugetlb pool. Without a usable /dev/kvm the guest launches
# (2 to 5, and the storm's guests) are skipped, saying so, and the engine
# part runs: 1, 6, the storm's memory side, and in place of 2 `zvmm prezero` without a guest, on fresh
# memory and on a warm poisoned pool, at every size. The report lists
# what was skipped and why.
#
# zvmm runs with a calibration profile (`zvmm calibrate`, into a cache
# directory of the suite's own), as a deployment would.
#
# Every point is REPS runs on warm memory (the hugepages are reserved and
# touched once before any timing; DESIGN.md 7); bench/report.sh turns the
# samples into the Markdown report, the JSON and the plots. Hugepage
# counts, mounts, pool files and state records are put back on exit,
# also on SIGINT/SIGTERM.
#
# Usage (root): bench/suite.sh [--smoke]   (make bench-suite, make
# bench-smoke). Environment: OUT, SIZES, PAGES, REPS, CHUNKS, CHUNK_GIB,
# PROFILE_GIB, NEWUSER_GIB, NEWUSER_LAUNCHES, BENCH_SIZE, ZVMM, ELF, POISON.
set -euo pipefail
cd "$(dirname "$0")/.."

SMOKE=0
case ${1:-} in
--smoke) SMOKE=1 ;;
"") ;;
-h | --help)
	# The whole comment above, to its usage lines.
	sed -n '2,/^set -euo pipefail$/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "suite.sh: unknown argument '$1' (try --smoke or --help)" >&2
	exit 2
	;;
esac

ZVMM=${ZVMM:-build/zvmm}
ELF=${ELF:-build/guest/touch.elf}
POISON=${POISON:-build/bench/poison}
if [ "$SMOKE" = 1 ]; then
	# One small size per method, one run each: the scripts cannot rot.
	OUT=${OUT:-build/bench-smoke}
	SIZES=${SIZES:-1}
	PAGES=${PAGES:-2M}
	REPS=${REPS:-1}
	CHUNKS=${CHUNKS:-"256K 2M"}
	CHUNK_GIB=${CHUNK_GIB:-1}
	PROFILE_GIB=${PROFILE_GIB:-1}
	NEWUSER_GIB=${NEWUSER_GIB:-1}
	NEWUSER_LAUNCHES=${NEWUSER_LAUNCHES:-2}
	BENCH_SIZE=${BENCH_SIZE:-256M}
else
	OUT=${OUT:-bench/results}
	SIZES=${SIZES:-"1 2 4 8 16"}
	# 1G first: contiguous memory for 1 GiB pages is easiest to find
	# before the 2M runs have scattered page-cache pages.
	PAGES=${PAGES:-"1G 2M"}
	REPS=${REPS:-5}
	CHUNKS=${CHUNKS:-"256K 2M 8M 64M"}
	CHUNK_GIB=${CHUNK_GIB:-16}
	PROFILE_GIB=${PROFILE_GIB:-6}
	NEWUSER_GIB=${NEWUSER_GIB:-4}
	NEWUSER_LAUNCHES=${NEWUSER_LAUNCHES:-10}
	BENCH_SIZE=${BENCH_SIZE:-4G}
fi
CMDLINE="stride=2M verify=1"
MAX_GIB=$(printf '%s\n' $SIZES "$CHUNK_GIB" | sort -n | tail -1)

die() {
	echo "suite.sh: $1" >&2
	exit "${2:-1}"
}
sysfs() {
	echo /sys/kernel/mm/hugepages/hugepages-$([ "$1" = 1G ] && echo 1048576 || echo 2048)kB/$2
}
page_bytes() { [ "$1" = 1G ] && echo $((1 << 30)) || echo $((2 << 20)); }
[ "$(id -u)" = 0 ] || die "run as root: it reserves hugepages and gives them back" 3
command -v gnuplot >/dev/null || die "needs gnuplot (apt-get install gnuplot-nox, or make deps)" 3
[ -x "$ZVMM" ] && [ -x "$POISON" ] ||
	die "run 'make $ZVMM $POISON' first (or make bench-suite)" 2

# What this machine can run: what is skipped is said here, and listed in
# the report (machine.tsv's skip lines).
SKIPS=()
skip() {
	echo "suite.sh: skipped: $1" >&2
	SKIPS+=("$1")
}
# The page sizes asked for that this kernel has.
have=""
for page in $PAGES; do
	case $page in
	1G | 2M) ;;
	*) die "PAGES: '$page' is no page size (2M or 1G)" 2 ;;
	esac
	if [ -d "$(dirname "$(sysfs "$page" nr_hugepages)")" ]; then
		have+="${have:+ }$page"
	else
		skip "$page pages: the kernel has no $page hugetlb pool (no $(dirname "$(sysfs "$page" nr_hugepages)"))"
	fi
done
PAGES=$have
[ -n "$PAGES" ] || die "none of the page sizes asked for has a hugetlb pool here" 3

. bench/kvm.sh
NO_KVM=$(kvm_unusable)
if [ -n "$NO_KVM" ]; then
	skip "the guest launches (zvmm run and QEMU: launch to ready, fault latency against chunk size, launches without a profile$([ "$SMOKE" = 1 ] || echo ", the launch storm's guests (its memory side runs)")): no usable /dev/kvm ($NO_KVM); zvmm prezero without a guest stands in for the launch rows"
else
	command -v qemu-system-x86_64 >/dev/null || die "needs qemu-system-x86 (make deps)" 3
	[ -f "$ELF" ] || die "run 'make $ELF' first (or make bench-suite)" 2
fi

mkdir -p "$OUT"
RAW=$OUT/raw.tsv
LOG=$OUT/suite.log
: >"$LOG"
printf 'section\tmethod\tpage\tgib\tchunk\trep\tmetric\tvalue\n' >"$RAW"

MNT=$(mktemp -d /tmp/zvmm-suite.XXXXXX)
export ZVMM_STATE_DIR=$MNT.state
# zvmm runs as a deployment would: with a calibration profile, so that
# backend = auto reads it instead of measuring at every launch. Its own
# cache directory, so the user's profile is left alone.
export ZVMM_CACHE_DIR=$MNT.cache
J=$MNT.json
declare -A saved
for f in /sys/kernel/mm/hugepages/hugepages-*/nr_hugepages; do saved[$f]=$(cat "$f"); done
CHILD=""

cleanup() {
	trap - EXIT INT TERM
	set +e
	if [ -n "$CHILD" ]; then
		kill "$CHILD" 2>/dev/null
		wait "$CHILD" 2>/dev/null
	fi
	rm -f "$MNT/pool" "$J" 2>/dev/null
	umount "$MNT" 2>/dev/null
	rmdir "$MNT" 2>/dev/null
	rm -rf "$ZVMM_STATE_DIR" "$ZVMM_CACHE_DIR" "$MNT.cold"
	for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done
	[ -t 2 ] && printf '\r\033[K' >&2
	return 0
}
trap 'cleanup' EXIT
trap 'echo "suite.sh: interrupted; hugepages and pool files put back" >&2; cleanup; exit 130' INT TERM

# Progress: one line, rewritten on a terminal, one per point otherwise.
STEP=0
TOTAL=0
progress() {
	STEP=$((STEP + 1))
	if [ -t 2 ]; then
		printf '\r\033[K[%3d/%d] %s' "$STEP" "$TOTAL" "$*" >&2
	else
		printf '[%3d/%d] %s\n' "$STEP" "$TOTAL" "$*" >&2
	fi
}

# child CMD...: runs CMD in the background and waits, so that a signal
# reaches the trap at once (cleanup then stops CMD) rather than after it.
child() {
	local rc=0
	"$@" &
	CHILD=$!
	wait "$CHILD" || rc=$?
	CHILD=""
	return $rc
}

sample() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RAW"; }

# jget SECTION KEY: a number from zvmm's JSON report in $J ("" top level)
jget() {
	local from
	if [ -n "$1" ]; then
		from=$(grep -o "\"$1\": {.*" "$J" | head -1)
	else
		from=$(cat "$J")
	fi
	grep -o "\"$2\": [0-9.]*" <<<"$from" | head -1 | awk '{print $2}'
}

us_since() {
	local a=${1/./} b=${2/./}
	echo $((10#$b - 10#$a))
}
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }

# timed CMD...: runs CMD with its stdout read here; sets T_READY and
# T_REPORT (ms from exec to the guest's ZVMM-BOOT line, written by its
# first instructions, and to its ZVMM-REPORT line; "nan" when missing),
# REPORT (that line) and RC.
timed() {
	local t0 now line
	T_READY=nan T_REPORT=nan REPORT=""
	t0=$EPOCHREALTIME
	exec {fd}< <(exec "$@" 2>>"$LOG")
	CHILD=$!
	while IFS= read -r line <&$fd; do
		now=$EPOCHREALTIME
		case $line in
		ZVMM-BOOT*)
			[ "$T_READY" = nan ] && T_READY=$(ms "$(us_since "$t0" "$now")")
			;;
		ZVMM-REPORT*)
			if [ -z "$REPORT" ]; then
				T_REPORT=$(ms "$(us_since "$t0" "$now")")
				REPORT=$line
			fi
			;;
		esac
	done
	exec {fd}<&-
	RC=0
	wait "$CHILD" || RC=$?
	CHILD=""
}

STALE=0
# record METHOD PAGE GIB REP: the samples of the run just timed
record() {
	local nz
	sample launch "$1" "$2" "$3" - "$4" ready_ms "$T_READY"
	sample launch "$1" "$2" "$3" - "$4" report_ms "$T_REPORT"
	nz=$(grep -o '"nonzero_bytes":[0-9]*' <<<"$REPORT" | cut -d: -f2)
	if [ -z "$REPORT" ] || [ "${nz:-1}" != 0 ]; then
		echo "suite.sh: $1 $2 $3 GiB rep $4: exit $RC, report '${REPORT:-none}' (see $LOG)" >&2
		STALE=$((STALE + 1))
	fi
	case $1 in
	zvmm-*)
		sample launch "$1" "$2" "$3" - "$4" zvmm_ready_ms "$(jget launch ready_ms)"
		sample launch "$1" "$2" "$3" - "$4" max_rss_kib "$(jget process max_rss_kib)"
		sample launch "$1" "$2" "$3" - "$4" cpu_s \
			"$(awk -v u="$(jget process user_s)" -v s="$(jget process sys_s)" 'BEGIN {print u + s}')"
		sample launch "$1" "$2" "$3" - "$4" prezero_gbps "$(jget prezero gbps)"
		sample launch "$1" "$2" "$3" - "$4" faults "$(jget demand faults)"
		# Launch phases: zvmm's own (every phase but the memslots)
		# and the kernel's memslot creation, apart.
		phases=$(grep -o '"phases_ms": {[^}]*}' "$J" | head -1)
		sample launch "$1" "$2" "$3" - "$4" own_phases_ms \
			"$(grep -o '"[a-z_]*": [0-9.]*' <<<"$phases" |
				awk -F': ' '$1 != "\"kvm_memslots\"" { s += $2 } END { if (NR) print s }')"
		sample launch "$1" "$2" "$3" - "$4" memslots_ms "$(jget launch kvm_memslots)"
		sample launch "$1" "$2" "$3" - "$4" engine_ms "$(jget launch engine)"
		;;
	esac
}

zvmm_run() { # GIB PAGE POLICY [ARGS...]
	local gib=$1 page=$2 pol=$3
	shift 3
	timed "$ZVMM" run --mem "${gib}G" --hugepages "$page" \
		--policy "configs/$pol.conf" --cmdline "$CMDLINE" --quiet \
		--json "$J" "$@"
}

qemu_run() { # GIB PAGE on|off
	local pre=prealloc=off
	[ "$3" = on ] && pre="prealloc=on,prealloc-threads=$THREADS"
	timed qemu-system-x86_64 \
		-M microvm,x-option-roms=off,memory-backend=m0 -cpu qemu64 \
		-accel kvm -m "${1}G" \
		-object "memory-backend-memfd,id=m0,size=${1}G,hugetlb=on,hugetlbsize=$2,$pre" \
		-nodefaults -nographic -serial stdio \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$ELF" -append "$CMDLINE"
}

pool_run() { # GIB PAGE POLICY [ARGS...]: on the pool file, kept dirty
	local gib=$1 page=$2 pol=$3
	shift 3
	child "$POISON" "$MNT/pool" $((gib << 30))
	zvmm_run "$gib" "$page" "$pol" --pool "$MNT/pool" \
		--set pool.on_exit=keep "$@"
}

# reserve PAGE GIB: the pool holds GIB of PAGE pages beyond the saved
# count, every page touched once; returns 1 when the kernel has fewer.
# 1 GiB pages need contiguous memory: compact first and, when that is
# not enough, drop the page cache and compact again.
reserve() {
	local f n
	for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done
	umount "$MNT" 2>/dev/null || true
	f=$(sysfs "$1" nr_hugepages)
	n=$((($2 << 30) / $(page_bytes "$1")))
	echo 1 >/proc/sys/vm/compact_memory
	echo $((${saved[$f]} + n)) >"$f"
	if [ "$(cat "$(sysfs "$1" free_hugepages)")" -lt "$n" ]; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
		echo 1 >/proc/sys/vm/compact_memory
		echo $((${saved[$f]} + n)) >"$f"
	fi
	[ "$(cat "$(sysfs "$1" free_hugepages)")" -ge "$n" ] || return 1
	mount -t hugetlbfs -o pagesize="$1" none "$MNT"
	# Untimed: the first touch of memory the host reclaimed is slow.
	# Without KVM the engine alone touches it.
	if [ -z "$NO_KVM" ]; then
		child "$ZVMM" run --mem "${2}G" --hugepages "$1" \
			--policy configs/prezero.conf --quiet --json "$J" \
			>/dev/null 2>>"$LOG" || true
	else
		child "$ZVMM" prezero --mem "${2}G" --hugepages "$1" \
			--policy configs/prezero.conf --quiet --json "$J" \
			>/dev/null 2>>"$LOG" || true
	fi
	THREADS=$(jget policy workers)
	THREADS=${THREADS:-2}
}

# engine_run GIB PAGE fresh|warm: `zvmm prezero` without a guest, on
# fresh memory (an anonymous memfd) or on the pool file freshly
# poisoned; sets T_WALL (ms from exec to exit) and RC.
engine_run() {
	local t0 pool=()
	if [ "$3" = warm ]; then
		child "$POISON" "$MNT/pool" $(($1 << 30))
		pool=(--pool "$MNT/pool")
	fi
	rm -f "$J"
	RC=0
	t0=$EPOCHREALTIME
	child "$ZVMM" prezero --mem "${1}G" --hugepages "$2" "${pool[@]}" \
		--policy configs/prezero.conf --quiet --json "$J" \
		>/dev/null 2>>"$LOG" || RC=$?
	T_WALL=$(ms "$(us_since "$t0" "$EPOCHREALTIME")")
}

# record_engine METHOD PAGE GIB REP: the samples of the engine run just timed
record_engine() {
	if [ "$RC" != 0 ] || [ ! -s "$J" ]; then
		echo "suite.sh: zvmm $1 $2 $3 GiB rep $4: exit $RC (see $LOG)" >&2
		STALE=$((STALE + 1))
		return 0
	fi
	sample engine "$1" "$2" "$3" - "$4" wall_ms "$T_WALL"
	sample engine "$1" "$2" "$3" - "$4" prezero_ms \
		"$(awk -v s="$(jget prezero seconds)" 'BEGIN {print s * 1000}')"
	sample engine "$1" "$2" "$3" - "$4" prezero_gbps "$(jget prezero gbps)"
}

count() { set -- $1; echo $#; }
bytes() {
	case $1 in
	*K) echo $((${1%K} << 10)) ;;
	*M) echo $((${1%M} << 20)) ;;
	*G) echo $((${1%G} << 30)) ;;
	*) echo "$1" ;;
	esac
}
chunks_for() { # PAGE: the chunks of CHUNKS that fit in one page
	local c
	for c in $CHUNKS; do
		[ "$(bytes "$c")" -le "$(bytes "$1")" ] && echo "$c"
	done
	return 0
}
NS=$(count "$SIZES")
NP=$(count "$PAGES")
NC=0
for page in $PAGES; do NC=$((NC + $(chunks_for "$page" | wc -l))); done
# calibrate, bench, the points of each page, new users (and the storm),
# the report.
if [ -z "$NO_KVM" ]; then
	TOTAL=$((2 + NP * NS * 7 + NC + 2))
	case " $PAGES " in *" 1G "*) TOTAL=$((TOTAL + 1)) ;; esac
else
	TOTAL=$((2 + NP * NS * 2 + 2))
fi
[ "$SMOKE" = 1 ] || TOTAL=$((TOTAL + 1))

{
	echo "date	$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "host	$(hostname)"
	echo "cpu	$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "cpus	$(nproc)"
	echo "numa_nodes	$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)"
	echo "mem_gib	$(awk '/MemTotal/ {printf "%.1f", $2 / 1048576}' /proc/meminfo)"
	echo "kernel	$(uname -r)"
	echo "os	$(. /etc/os-release && echo "$PRETTY_NAME")"
	if [ -z "$NO_KVM" ]; then
		echo "qemu	$(qemu-system-x86_64 --version | head -1)"
	else
		echo "qemu	not run"
	fi
	echo "kvm	${NO_KVM:-usable}"
	echo "zvmm	$(git describe --always --dirty 2>/dev/null || echo unknown)"
	echo "reps	$REPS"
	echo "sizes	$SIZES"
	echo "pages	$PAGES"
	echo "chunks	$CHUNKS"
	echo "chunk_gib	$CHUNK_GIB"
	echo "profile_gib	$PROFILE_GIB"
	echo "smoke	$SMOKE"
	echo "cmdline	$CMDLINE"
	for s in "${SKIPS[@]}"; do printf 'skip\t%s\n' "$s"; done
} >"$OUT/machine.tsv"

progress "zvmm calibrate (the profile backend = auto reads)"
child "$ZVMM" calibrate --quiet 2>>"$LOG"

progress "zvmm bench: backends and kernel fault zeroing ($BENCH_SIZE, $REPS reps)"
child "$ZVMM" bench --size "$BENCH_SIZE" --reps "$REPS" --quiet \
	--json "$OUT/backends.json" --plot "$OUT" >"$OUT/backends.txt" 2>>"$LOG"

for page in $PAGES; do
	need=$MAX_GIB
	while ! reserve "$page" "$need"; do
		# Fragmented memory may not give 1 GiB pages: measure what fits.
		echo "suite.sh: cannot reserve $need GiB of $page pages; trying $((need - 1)) GiB" >&2
		need=$((need - 1))
		[ "$need" -ge 1 ] || die "no $page hugepages can be reserved" 3
	done
	sample meta - "$page" "$need" - - reserved_gib "$need"
	sample meta - "$page" - - - workers "$THREADS"
	printf 'workers_%s\t%s\n' "$page" "$THREADS" >>"$OUT/machine.tsv"
	if [ -n "$NO_KVM" ]; then
		# No guest can boot: the engine's prezero alone, at every size.
		for gib in $SIZES; do
			if [ "$gib" -gt "$need" ]; then
				STEP=$((STEP + 2))
				continue
			fi
			rm -f "$MNT/pool"
			progress "$page $gib GiB zvmm prezero without a guest, fresh memory"
			for r in $(seq "$REPS"); do
				engine_run "$gib" "$page" fresh
				record_engine prezero-fresh "$page" "$gib" "$r"
			done
			progress "$page $gib GiB zvmm prezero without a guest, warm poisoned pool"
			for r in $(seq "$REPS"); do
				engine_run "$gib" "$page" warm
				record_engine prezero-warm "$page" "$gib" "$r"
			done
			rm -f "$MNT/pool" "$ZVMM_STATE_DIR"/* 2>/dev/null || true
		done
		continue
	fi
	for gib in $SIZES; do
		if [ "$gib" -gt "$need" ]; then
			STEP=$((STEP + 7))
			continue
		fi
		rm -f "$MNT/pool"
		progress "$page $gib GiB zvmm prezero, fresh memory"
		for r in $(seq "$REPS"); do
			zvmm_run "$gib" "$page" prezero
			record zvmm-prezero-fresh "$page" "$gib" "$r"
		done
		progress "$page $gib GiB QEMU prealloc=on, $THREADS threads"
		for r in $(seq "$REPS"); do
			qemu_run "$gib" "$page" on
			record qemu-prealloc "$page" "$gib" "$r"
		done
		progress "$page $gib GiB QEMU prealloc=off"
		for r in $(seq "$REPS"); do
			qemu_run "$gib" "$page" off
			record qemu-noprealloc "$page" "$gib" "$r"
		done
		for pol in prezero demand hybrid; do
			progress "$page $gib GiB zvmm $pol, warm poisoned pool"
			for r in $(seq "$REPS"); do
				pool_run "$gib" "$page" "$pol"
				record "zvmm-$pol-warm" "$page" "$gib" "$r"
			done
		done
		progress "$page $gib GiB zvmm relaunch after on_exit=scrub"
		for r in $(seq "$REPS"); do
			pool_run "$gib" "$page" demand --set pool.on_exit=scrub
			zvmm_run "$gib" "$page" hybrid --pool "$MNT/pool" \
				--set pool.on_exit=keep
			record zvmm-relaunch-scrubbed "$page" "$gib" "$r"
		done
		rm -f "$MNT/pool" "$ZVMM_STATE_DIR"/* 2>/dev/null || true
	done
	# Chunks are cut inside one hugepage (DESIGN.md 5): 2 MiB pages
	# take the chunks up to 2M, 1 GiB pages all of them.
	gib=$((CHUNK_GIB < need ? CHUNK_GIB : need))
	CMDLINE="stride=2M verify=1 order=down"
	for c in $(chunks_for "$page"); do
		progress "$page $gib GiB hybrid fault latency, chunk $c"
		for r in $(seq "$REPS"); do
			pool_run "$gib" "$page" hybrid --set "zeroing.chunk=$c"
			sample chunk hybrid "$page" "$gib" "$c" "$r" chunk_bytes "$(jget policy chunk_bytes)"
			for k in faults p50 p99 max; do
				sample chunk hybrid "$page" "$gib" "$c" "$r" "busy_$k" "$(jget busy_latency_us "$k")"
			done
			sample chunk hybrid "$page" "$gib" "$c" "$r" bg_bytes "$(jget background bytes)"
			sample chunk hybrid "$page" "$gib" "$c" "$r" bg_seconds "$(jget background seconds)"
			sample chunk hybrid "$page" "$gib" "$c" "$r" scrubbed_pages "$(jget demand scrubbed_pages)"
		done
	done
	CMDLINE="stride=2M verify=1"
	rm -f "$MNT/pool"
	# A user who never ran `zvmm calibrate`: an empty cache directory,
	# a poisoned pool with no record, backend = auto. The first launch
	# measures the backends and keeps the profile; the second reads it.
	if [ "$page" = 1G ]; then
		gib=$((PROFILE_GIB < need ? PROFILE_GIB : need))
		progress "$page $gib GiB first and second launch without a profile"
		for r in $(seq "$REPS"); do
			rm -rf "$MNT.cold" "$ZVMM_STATE_DIR"/* 2>/dev/null || true
			child "$POISON" "$MNT/pool" $((gib << 30))
			for k in first second; do
				ZVMM_CACHE_DIR=$MNT.cold zvmm_run "$gib" "$page" \
					hybrid --pool "$MNT/pool" \
					--set pool.on_exit=scrub
				record "zvmm-$k-no-profile" "$page" "$gib" "$r"
			done
		done
		rm -rf "$MNT.cold" "$MNT/pool" "$ZVMM_STATE_DIR"/* 2>/dev/null || true
	fi
done

# Its own reservation, mount and cache directories: the suite's go back.
for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done
umount "$MNT" 2>/dev/null || true
progress "$NEWUSER_LAUNCHES new-user launches, $NEWUSER_GIB GiB poisoned 2M pool, no profile"
NEWUSER=0
child env OUT="$OUT" ZVMM="$ZVMM" POISON="$POISON" GIB="$NEWUSER_GIB" \
	PAGE=2M LAUNCHES="$NEWUSER_LAUNCHES" BEST_REPS="$REPS" \
	bash bench/newuser.sh >"$OUT/newuser.md" 2>>"$LOG" || NEWUSER=$?

if [ "$SMOKE" = 0 ]; then
	progress "launch storm: zvmmd, warm pool, QEMU (bench/storm.sh)"
	child env ZVMM="$ZVMM" ZVMMD="${ZVMMD:-$(dirname "$ZVMM")/zvmmd}" \
		MEMBW="${MEMBW:-$(dirname "$ZVMM")/bench/membw}" \
		ELF="$ELF" bash bench/storm.sh >"$OUT/storm.md" 2>>"$LOG" || true
fi

if [ "$SMOKE" = 0 ]; then
	progress "QEMU through zvmm exec, prealloc, first touch (bench/exec.sh)"
	child env ZVMM="$ZVMM" ZVMMD="${ZVMMD:-$(dirname "$ZVMM")/zvmmd}" \
		ELF="$ELF" bash bench/exec.sh >"$OUT/exec.md" 2>>"$LOG" || true
fi

progress "report"
bash bench/report.sh "$OUT"
[ -t 2 ] && printf '\r\033[K' >&2
echo "report: $OUT/report.md (JSON $OUT/suite.json, plots $OUT/*.svg)"
if [ "$NEWUSER" != 0 ]; then
	echo "suite.sh: not every new-user launch reached 0.85x the best backend (picked under a busy loop, bench/newuser.sh); see $OUT/newuser.md" >&2
fi
if [ "$STALE" -gt 0 ]; then
	echo "suite.sh: $STALE runs failed or ended without a clean guest report; see $LOG" >&2
	exit 1
fi
