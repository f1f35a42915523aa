#!/usr/bin/env bash
# QEMU, unmodified, on GIB GiB (8) of hugepage memory, the same guest
# (touch.elf touching every 2 MiB) and the same page size, four ways in
# one run on this machine:
#   exec record   zvmm exec --pool P (on_exit = scrub): each launch trusts
#                 the state record the one before wrote at its exit
#   exec zvmmd    zvmm exec --pool-service: one chunk zvmmd zeroed ahead
#                 (chunk = GIB), refilled between launches
#   prealloc      QEMU alone, memory-backend-memfd hugetlb with
#                 prealloc=on (prealloc-threads = the CPUs): the kernel
#                 zeroes every page before the guest starts
#   neither       QEMU alone, prealloc=off: the kernel zeroes each page at
#                 the guest's first touch
# Each is timed from the exec of its command (zvmm exec's, or QEMU's) to
# the guest's first serial line (ready: ZVMM-BOOT, written by its first
# instructions) and to its report once it touched all its memory (touch:
# ZVMM-REPORT). REPS runs of each (after one untimed), the medians, and
# prealloc's median over each way's (how many times sooner).
#
# Pages: 1 GiB where the kernel has a 1 GiB pool and can reserve GIB of
# them (twice that for zvmmd's stock and its refill), else 2 MiB, said
# on the first line. Without a usable /dev/kvm QEMU runs under TCG, whose
# own start takes most of a second whatever the memory: the rows are
# measured and reported, and judge nothing (the last line says so).
#
# Usage (root): bench/exec.sh   Environment: GIB=8, REPS=5, PAGE=2M (not
# 1 GiB pages), ACCEL=tcg (TCG even where KVM works), ZVMM, ZVMMD, ELF.
set -euo pipefail
cd "$(dirname "$0")/.."

ZVMM=${ZVMM:-build/zvmm}
ZVMMD=${ZVMMD:-build/zvmmd}
ELF=${ELF:-build/guest/touch.elf}
GIB=${GIB:-8}
REPS=${REPS:-5}
CMDLINE="stride=2M verify=1"

[ "$(id -u)" = 0 ] || { echo "exec.sh: run as root (zvmmd, hugepages)" >&2; exit 3; }
[ -x "$ZVMM" ] && [ -x "$ZVMMD" ] && [ -f "$ELF" ] ||
	{ echo "exec.sh: run make first" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "exec.sh: needs qemu-system-x86 (make deps)" >&2; exit 3; }
. bench/kvm.sh
no_kvm=$(kvm_unusable)
accel=kvm
[ -z "$no_kvm" ] || accel=tcg
# ACCEL=tcg: the TCG rows where KVM works too.
[ "${ACCEL:-}" != tcg ] || { accel=tcg; no_kvm="ACCEL=tcg"; }

hp=/sys/kernel/mm/hugepages
declare -A saved
for f in "$hp"/hugepages-*/nr_hugepages; do saved[$f]=$(cat "$f"); done
work=$(mktemp -d /tmp/zvmm-bench-exec.XXXXXX)
mkdir -m 0700 "$work/cache" "$work/state"
export ZVMM_CACHE_DIR=$work/cache ZVMM_STATE_DIR=$work/state
zpid=""
zvmmd_stop() {
	[ -z "$zpid" ] || { kill "$zpid" 2>/dev/null; wait "$zpid" 2>/dev/null || true; }
	zpid=""
}
cleanup() {
	zvmmd_stop
	rm -f "$work"/mnt/* 2>/dev/null
	umount "$work/mnt" 2>/dev/null || true
	umount -l "$work"/chunks/* 2>/dev/null || true
	rm -rf "$work"
	for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done
}
trap cleanup EXIT INT TERM

# reserve PAGE N: N pages of PAGE free above what was found, or fail.
nr_file() { echo "$hp/hugepages-$([ "$1" = 1G ] && echo 1048576 || echo 2048)kB/nr_hugepages"; }
reserve() {
	local f
	f=$(nr_file "$1")
	[ -e "$f" ] || return 1
	echo $((${saved[$f]} + $2)) >"$f"
	[ "$(cat "${f%nr_hugepages}free_hugepages")" -ge "$2" ]
}
pages_of() { echo $(((GIB << 30) / $([ "$1" = 1G ] && echo $((1 << 30)) || echo $((2 << 20))))); }

if [ "${PAGE:-}" != 2M ] && reserve 1G $((2 * GIB)); then
	PAGE=1G
else
	why="PAGE=2M"
	[ "${PAGE:-}" = 2M ] || why="the kernel has no 1 GiB pool or could not reserve $((2 * GIB)) 1 GiB pages"
	f1=$(nr_file 1G)
	[ ! -e "$f1" ] || echo "${saved[$f1]}" >"$f1"
	PAGE=2M
	if ! reserve 2M $((2 * $(pages_of 2M))); then
		echo "exec.sh: skipped: the kernel could not reserve $((2 * GIB)) GiB of 2 MiB pages"
		exit 0
	fi
	echo "exec.sh: 2 MiB pages: $why"
fi
n=$(pages_of "$PAGE")
threads=$(nproc)

now_us() { echo $(($(date +%s%N) / 1000)); }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}'; }

ms() { if [ -n "$1" ]; then awk "BEGIN {print $1 / 1000}"; else echo nan; fi; }

# Runs "$@"; prints "READY_MS TOUCH_MS" from the exec to the guest's
# ZVMM-BOOT and ZVMM-REPORT lines ("nan" for one that never came). A
# report with a byte that was not zero is kept in $work/stale.
timed() {
	local t0 line boot="" rep=""
	t0=$(now_us)
	while IFS= read -r line; do
		case $line in
		ZVMM-BOOT*) [ -n "$boot" ] || boot=$(($(now_us) - t0)) ;;
		ZVMM-REPORT*)
			[ -n "$rep" ] || rep=$(($(now_us) - t0))
			case $line in *'"nonzero_bytes":0,'*) ;; *) echo "$*: $line" >>"$work/stale" ;; esac
			;;
		esac
	done < <("$@" 2>>"$work/err")
	echo "$(ms "$boot") $(ms "$rep")"
}

QEMU=(qemu-system-x86_64 -M microvm,x-option-roms=off,memory-backend=m
	-cpu qemu64 -accel "$accel" -m "${GIB}G" -nodefaults -nographic
	-serial stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04
	-kernel "$ELF" -append "$CMDLINE")
ON_FD="memory-backend-file,id=m,size={mem-size},mem-path={mem-path},share=on"

# way NAME CMD...: one untimed run, then REPS timed; the samples in
# $work/NAME.ready and $work/NAME.touch. Between runs, $between (if set).
way() {
	local name=$1 r t
	shift
	"$@" >/dev/null 2>>"$work/err" || true
	: >"$work/$name.ready"
	: >"$work/$name.touch"
	for _ in $(seq "$REPS"); do
		[ -z "${between:-}" ] || $between
		read -r r t < <(timed "$@")
		printf ' %s' "$r" >>"$work/$name.ready"
		printf ' %s' "$t" >>"$work/$name.touch"
	done
}

zvmmd_full() {
	local z=$((GIB << 30))
	for _ in $(seq 2400); do
		"$ZVMM" pool status --socket "$work/zvmmd.sock" --json - 2>/dev/null |
			grep -q "\"zero_bytes\":$z,\"filling_bytes\":0" && return 0
		sleep 0.05
	done
	echo "exec.sh: zvmmd did not fill $GIB GiB in 120 s" >&2
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
printf 'QEMU on %d GiB of %s pages, four ways, %d runs each (median); %s, %s CPUs, kernel %s, %s\n' \
	"$GIB" "$PAGE" "$REPS" "$cpu" "$(nproc)" "$(uname -r)" \
	"$([ "$accel" = kvm ] && echo KVM || echo "TCG ($no_kvm)")"

# --- zvmm exec on a pool whose record the previous launch wrote
mkdir -p "$work/mnt"
mount -t hugetlbfs -o pagesize="$PAGE" none "$work/mnt"
"$ZVMM" prezero --mem "${GIB}G" --hugepages "$PAGE" --pool "$work/mnt/pool" \
	--quiet >/dev/null
between=""
way record "$ZVMM" exec --mem "${GIB}G" --hugepages "$PAGE" --quiet \
	--pool "$work/mnt/pool" --set pool.on_exit=scrub -- "${QEMU[@]}" \
	-object "$ON_FD"
rm -f "$work/mnt/pool"
umount "$work/mnt"

# --- zvmm exec on a zvmmd lease of one chunk
mkdir -p "$work/chunks"
printf '[service]\nsocket = %s\ndir = %s\ngroup = root\n[pages.%s]\nchunk = %dG\nlow = %dG\nhigh = %dG\nmax = %dG\n' \
	"$work/zvmmd.sock" "$work/chunks" "$PAGE" "$GIB" "$GIB" "$GIB" $((2 * GIB)) >"$work/zvmmd.conf"
"$ZVMMD" --config "$work/zvmmd.conf" >/dev/null 2>>"$work/err" &
zpid=$!
zvmmd_full
between=zvmmd_full
way zvmmd "$ZVMM" exec --mem "${GIB}G" --hugepages "$PAGE" --quiet \
	--pool-service --socket "$work/zvmmd.sock" -- "${QEMU[@]}" -object "$ON_FD"
between=""
zvmmd_stop

# --- QEMU alone: the kernel zeroes, at start or at first touch
memfd="memory-backend-memfd,id=m,size=${GIB}G,hugetlb=on,hugetlbsize=$PAGE"
way prealloc "${QEMU[@]}" -object "$memfd,prealloc=on,prealloc-threads=$threads"
way neither "${QEMU[@]}" -object "$memfd,prealloc=off"

pr=$(median <"$work/prealloc.ready")
printf '%-13s %9s %9s %17s  %s\n' "way" "ready ms" "touch ms" "prealloc/ready" "every ready (ms)"
for w in record zvmmd prealloc neither; do
	r=$(median <"$work/$w.ready")
	t=$(median <"$work/$w.touch")
	printf '%-13s %9.1f %9.1f %16sx  %s\n' "$([ "$w" = record ] || [ "$w" = zvmmd ] && echo "exec $w" || echo "$w")" \
		"$r" "$t" "$(awk "BEGIN {if ($r > 0) printf \"%.1f\", $pr / $r; else print \"nan\"}")" \
		"$(cat "$work/$w.ready")"
done
echo "ready: exec of the command to the guest's first serial line; touch: to its report, every 2 MiB touched"
echo "exec: zvmm exec's own prepare included (the record checked, the lease taken); prealloc-threads=$threads"
if [ "$accel" = tcg ]; then
	echo "TCG: reported for machines without KVM; these rows judge nothing (the 10x target is KVM's)"
fi
if [ -s "$work/stale" ]; then
	echo "exec.sh: a guest read a byte that was not zero:" >&2
	cat "$work/stale" >&2
	exit 1
fi
