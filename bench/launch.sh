#!/usr/bin/env bash
# Launch benchmark: zvmm (prezero policy) against QEMU with hugetlb
# preallocation, on the same machine, the same memory sizes and page
# sizes, booting the same touch.elf, in the same run. Both are timed the
# same way, from exec to the guest's ZVMM-REPORT line on the serial port;
# zvmm also reports launch.ready_ms (process start to first vCPU entry).
# Memory is fresh for both: each run allocates its hugepages anew and the
# kernel (QEMU) or zvmm's workers zero them.
#
# Usage (root): bench/launch.sh   Environment: SIZES="1 2 4 8" (GiB),
# PAGES="2M 1G" (those the kernel has a hugetlb pool of; the others are
# skipped, saying so), REPS=5, THREADS=<zvmm's worker count>, ZVMM, ELF.
# Every row boots a guest: it needs a usable /dev/kvm.
set -euo pipefail
cd "$(dirname "$0")/.."

ZVMM=${ZVMM:-build/zvmm}
ELF=${ELF:-build/guest/touch.elf}
SIZES=${SIZES:-"1 2 4 8"}
PAGES=${PAGES:-"2M 1G"}
REPS=${REPS:-5}
CMDLINE="stride=2M verify=1"

if [ "$(id -u)" != 0 ]; then
	echo "launch.sh: run as root (it reserves hugepages and gives them back)" >&2
	exit 3
fi
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "launch.sh: needs qemu-system-x86 (make deps)" >&2; exit 3; }
[ -x "$ZVMM" ] && [ -f "$ELF" ] || { echo "launch.sh: run make first" >&2; exit 2; }
. bench/kvm.sh
no_kvm=$(kvm_unusable)
if [ -n "$no_kvm" ]; then
	echo "launch.sh: every row boots a guest (zvmm run and QEMU), which needs a usable /dev/kvm: $no_kvm; without it, make bench-smoke or zvmm bench measure the zeroing engine" >&2
	exit 3
fi

declare -A saved
for f in /sys/kernel/mm/hugepages/hugepages-*/nr_hugepages; do saved[$f]=$(cat "$f"); done
restore() { for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done; }
trap restore EXIT INT TERM

now_us() { echo $(( $(date +%s%N) / 1000 )); }

# Runs "$@", prints the microseconds from exec to the ZVMM-REPORT line.
time_to_report() {
	local t0 line got=""
	t0=$(now_us)
	while IFS= read -r line; do
		case $line in
		ZVMM-REPORT*) [ -z "$got" ] && got=$(( $(now_us) - t0 )) ;;
		esac
	done < <("$@" 2>/dev/null)
	echo "${got:-nan}"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}'; }

sysfs() { echo /sys/kernel/mm/hugepages/hugepages-$([ "$1" = 1G ] && echo 1048576 || echo 2048)kB/nr_hugepages; }

# The page sizes asked for that the kernel has a pool of.
have=""
for page in $PAGES; do
	if [ -e "$(sysfs "$page")" ]; then
		have+="${have:+ }$page"
	else
		echo "launch.sh: $page pages skipped: the kernel has no $page hugetlb pool (no $(dirname "$(sysfs "$page")"))"
	fi
done
PAGES=$have
[ -n "$PAGES" ] || { echo "launch.sh: no page size asked for has a hugetlb pool here" >&2; exit 3; }

printf '%-5s %-4s %13s %14s %14s %9s\n' "GiB" "page" "zvmm ready ms" "zvmm report ms" "qemu report ms" "qemu/zvmm"
for page in $PAGES; do
	pbytes=$([ "$page" = 1G ] && echo $((1 << 30)) || echo $((2 << 20)))
	for gib in $SIZES; do
		n=$(( (gib << 30) / pbytes ))
		f=$(sysfs "$page")
		echo $(( ${saved[$f]} + n )) >"$f"
		if [ "$(cat "${f%nr_hugepages}free_hugepages")" -lt "$n" ]; then
			printf '%-5s %-4s %s\n' "$gib" "$page" "skipped: the kernel could not reserve $n pages"
			echo "${saved[$f]}" >"$f"
			continue
		fi
		# Untimed: first touch of memory the host reclaimed is slow
		# (DESIGN.md 7); whoever ran first would pay it. It also tells
		# zvmm's worker count, which QEMU gets as prealloc-threads.
		json=$(mktemp)
		"$ZVMM" run --mem "${gib}G" --hugepages "$page" --quiet \
			--json "$json" >/dev/null 2>&1 || true
		workers=$(grep -o '"workers": [0-9]*' "$json" | awk '{print $2}')
		rm -f "$json"
		THREADS=${THREADS:-${workers:-2}}
		zr=""; zq=""; qq=""
		for _ in $(seq "$REPS"); do
			json=$(mktemp)
			zq+=" $(time_to_report "$ZVMM" run --mem "${gib}G" --hugepages "$page" \
				--cmdline "$CMDLINE" --quiet --json "$json")"
			zr+=" $(grep -o '"ready_ms": [0-9.]*' "$json" | awk '{print $2}')"
			rm -f "$json"
			qq+=" $(time_to_report qemu-system-x86_64 \
				-M microvm,x-option-roms=off,memory-backend=m0 -cpu qemu64 -accel kvm \
				-m "${gib}G" -object "memory-backend-memfd,id=m0,size=${gib}G,hugetlb=on,hugetlbsize=${page},prealloc=on,prealloc-threads=${THREADS}" \
				-nodefaults -nographic -serial stdio \
				-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
				-kernel "$ELF" -append "$CMDLINE")"
		done
		mr=$(echo "$zr" | median)
		mz=$(echo "$zq" | median)
		mq=$(echo "$qq" | median)
		printf '%-5s %-4s %13.1f %14.1f %14.1f %9s\n' "$gib" "$page" "$mr" \
			"$(awk "BEGIN {print $mz / 1000}")" "$(awk "BEGIN {print $mq / 1000}")" \
			"$(awk "BEGIN {if ($mz > 0) printf \"%.2fx\", $mq / $mz; else print \"nan\"}")"
		echo "${saved[$f]}" >"$f"
	done
done
echo "median of $REPS runs; qemu prealloc-threads=$THREADS; guest cmdline: $CMDLINE"
