#!/usr/bin/env bash
# Launch storm: N launches of 1 GiB guests on 1 GiB pages (2 MiB pages
# where the kernel has no 1 GiB pool) one after another, each guest
# touching all of its memory (every 2 MiB), three ways in one run on this
# machine:
#   zvmmd      zvmm run --pool-service: chunks zvmmd zeroed ahead, at idle
#   warm pool  zvmm run --pool P, on_exit = scrub: each launch scrubs at its
#              exit for the next one, which trusts the state record
#   qemu       QEMU with hugetlb preallocation (the kernel zeroes at start)
# For each: every launch's ready time (zvmm: launch.ready_ms, process start
# to first vCPU entry; QEMU: exec to the guest's report, an upper bound,
# with zvmm's same measure beside it), the median, and the host CPU seconds
# the whole storm took (zvmmd's own CPU time for the zvmmd row, zeroing
# included; the launching processes' for every row). Then a running
# guest's touch rate with zvmmd filling chunks at idle against an idle host,
# and what the filling takes from the memory bandwidth of a busy vCPU: a
# guest here is emulated (PVM) and cannot load memory itself, so a writer
# pinned to one core (bench/tools/membw.c) stands in for it, the filler
# taking the other core at idle priority as it would on a host.
#
# Without a usable /dev/kvm no guest boots: the touch rate is skipped,
# saying why, and the storm measures its memory side alone. N launches,
# one after another, of a libzvmm tenant (bench/tools/storm-tenant.c) that
# opens 1 GiB of the storm's pages, three ways:
#   zvmmd      leased from a zvmmd of this run's own (ZVMM_SOURCE_SERVICE),
#              filled to its high watermark before the storm and between
#              launches, as above
#   warm pool  a pool file, on_exit = scrub, each launch trusting the
#              record of the one before
#   kernel     no zvmm: a private hugetlb mapping, which the kernel zeroes
#              at each first fault
# and touches it as the touch guest does (every 2 MiB, 8 lines checked for
# zero, one write), then exits. Per way: each launch's ready time (inside
# the tenant, CLOCK_MONOTONIC: open to memory a vCPU may touch), the
# touches' time, the medians, and the host CPU seconds of the storm
# (the tenants', and zvmmd's own after the + for the zvmmd row), each
# beside its ratio to the kernel's, with the CPU and kernel named. The
# tenants' calibration profile and state records stay in this run's
# temporary directory. Then the bandwidth part (no guest in it) runs.
#
# Usage (root): bench/storm.sh   Environment: N=16, ZVMM, ZVMMD, ELF, MEMBW,
# TENANT (the storm's tenant without /dev/kvm), PAGE=2M (not 1 GiB pages).
set -euo pipefail
cd "$(dirname "$0")/.."

ZVMM=${ZVMM:-build/zvmm}
ZVMMD=${ZVMMD:-build/zvmmd}
ELF=${ELF:-build/guest/touch.elf}
MEMBW=${MEMBW:-$(dirname "$ZVMM")/bench/membw}
TENANT=${TENANT:-$(dirname "$ZVMM")/bench/storm-tenant}
N=${N:-16}
CMDLINE="stride=2M verify=8"

[ "$(id -u)" = 0 ] || { echo "storm.sh: run as root (zvmmd, hugepages)" >&2; exit 3; }
[ -x "$ZVMM" ] && [ -x "$ZVMMD" ] && [ -x "$MEMBW" ] ||
	{ echo "storm.sh: run make first" >&2; exit 2; }

. bench/kvm.sh
no_kvm=$(kvm_unusable)
if [ -z "$no_kvm" ]; then
	[ -f "$ELF" ] || { echo "storm.sh: run make first" >&2; exit 2; }
	command -v qemu-system-x86_64 >/dev/null ||
		{ echo "storm.sh: needs qemu-system-x86 (make deps)" >&2; exit 3; }
else
	[ -x "$TENANT" ] || { echo "storm.sh: run make first" >&2; exit 2; }
fi

hp=/sys/kernel/mm/hugepages
g2=$hp/hugepages-2048kB/nr_hugepages
# The storm's page size: 1 GiB where the kernel has a pool of them
# (PAGE=2M in the environment runs it on 2 MiB pages anyway: a host whose
# memory is too fragmented for 6 GiB of 1 GiB pages).
if [ "${PAGE:-}" = 2M ]; then
	echo "storm.sh: PAGE=2M: the storm runs on 2 MiB pages"
elif [ -d "$hp/hugepages-1048576kB" ]; then
	PAGE=1G
else
	PAGE=2M
	echo "storm.sh: 1 GiB pages skipped: the kernel has no 1 GiB hugetlb pool (no $hp/hugepages-1048576kB); the storm runs on 2 MiB pages"
fi
gp=$hp/hugepages-$([ "$PAGE" = 1G ] && echo 1048576 || echo 2048)kB/nr_hugepages
declare -A saved
for f in "$hp"/hugepages-*/nr_hugepages; do saved[$f]=$(cat "$f"); done
# raise POOL N: POOL's count N pages above what was found (several
# raises of one pool add up when given as one N).
raise() { echo $((${saved[$1]} + $2)) >"$1"; }

work=$(mktemp -d /tmp/zvmm-suite-storm.XXXXXX)
# Every launch's calibration profile and state records in this run's
# directory, zvmmd's too: none in the host's /var/cache/zvmm or
# /var/lib/zvmm (the guest launches wrote root's profile there).
mkdir -m 0700 "$work/cache" "$work/state"
export ZVMM_CACHE_DIR=$work/cache ZVMM_STATE_DIR=$work/state
zpid=""
cleanup() {
	[ -n "$zpid" ] && kill "$zpid" 2>/dev/null && wait "$zpid" 2>/dev/null
	rm -f "$work"/mnt/* 2>/dev/null
	umount "$work/mnt" 2>/dev/null || true
	umount -l "$work"/chunks/* 2>/dev/null || true
	rm -rf "$work"
	for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done
}
trap cleanup EXIT INT TERM

cpu_of() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}'; }
ready_of() { grep -o '"ready_ms": [0-9.]*' "$1" | awk '{print $2}'; }
now_us() { echo $(($(date +%s%N) / 1000)); }

# zvmmd.conf for one pool: FILE SECTION LOW HIGH MAX [RATE]
zvmmd_conf() {
	{
		printf '[service]\nsocket = %s\ndir = %s\ngroup = root\n' \
			"$work/zvmmd.sock" "$work/chunks"
		printf '[%s]\nchunk = 1G\nlow = %s\nhigh = %s\nmax = %s\n' "$2" "$3" "$4" "$5"
		[ -z "${6:-}" ] || printf '[scrub]\nrate = %s\n' "$6"
	} >"$1"
}
# In this shell (zpid is its): a zvmmd on FILE, listening when this returns.
zvmmd_start() {
	zvmmd_stop
	"$ZVMMD" --config "$1" >/dev/null 2>>"$work/zvmmd.log" &
	zpid=$!
	for _ in $(seq 500); do [ -S "$work/zvmmd.sock" ] && break; sleep 0.01; done
}
zvmmd_stop() {
	[ -z "$zpid" ] || { kill "$zpid" 2>/dev/null; wait "$zpid" 2>/dev/null || true; }
	zpid=""
}

# One zvmm launch: its ready_ms, '*' after it when zvmmd leased it no
# zeroed chunk (the guest must have read zero either way).
launch() {
	local json=$work/launch.json
	"$ZVMM" run --mem 1G --hugepages "$PAGE" --cmdline "$CMDLINE" --quiet \
		--json "$json" "$@" >/dev/null 2>"$work/err" ||
		{ echo "storm.sh: a launch failed: $(cat "$work/err")" >&2; exit 1; }
	printf '%s' "$(ready_of "$json")"
	grep -q '"empty_bytes": [1-9]' "$json" && printf '*'
	echo
	# A launch over the 5 ms target says where its time went, in this run.
	if [ "$measuring" = 1 ] && awk "BEGIN {exit !($(ready_of "$json") > 5)}"; then
		printf '%s ms (%s): ' "$(ready_of "$json")" "$*" >>"$work/slow"
		tr -d ' \n' <"$json" | grep -o '"phases_ms":{[^}]*}' |
			sed 's/"phases_ms"://; s/[{}"]//g; s/,/, /g; s/:/ /g' >>"$work/slow"
	fi
}

measuring=0

# The CPU seconds (user + system) of this shell's children so far: run
# in this shell, not a $(...) subshell, whose children are its own.
cpu_mark() { times >"$work/times"; }
cpu_read() { tail -1 "$work/times" | awk '{gsub("m"," "); gsub("s",""); print $1 * 60 + $2 + $3 * 60 + $4}'; }

storm_part() {
	# The storm's guest, zvmmd's clean chunks and the warm pool: 6 GiB
	# of the storm's pages; the touch rate's guest below, 1 GiB of 2 MiB
	# pages (and slack), on top when that is the same pool.
	local n=$(((6 << 30) / $([ "$PAGE" = 1G ] && echo $((1 << 30)) || echo $((2 << 20)))))
	raise "$gp" "$n"
	if [ "$PAGE" = 1G ]; then
		raise "$g2" $((512 + 64))
	else
		raise "$g2" $((n + 512 + 64))
	fi
	if [ "$(cat "${gp%nr_hugepages}free_hugepages")" -lt "$n" ]; then
		echo "storm.sh: skipped: the storm and the touch rate: the kernel could not reserve 6 GiB of $PAGE pages (memory fragmented: reserve them early, or at boot)"
		return 0
	fi
	printf 'launch storm: %d launches of 1 GiB guests on %s pages, each touching every 2 MiB; %s\n' \
		"$N" "$PAGE" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

	# --- zvmmd
	mkdir -p "$work/chunks"
	zvmmd_conf "$work/zvmmd.conf" "pages.$PAGE" 3G 3G 4G
	zvmmd_start "$work/zvmmd.conf"
	# Filled up to high before the storm: the steady state a host keeps.
	for _ in $(seq 600); do
		"$ZVMM" pool status --socket "$work/zvmmd.sock" --json - 2>/dev/null |
			grep -q '"zero_bytes":3221225472' && break
		sleep 0.05
	done
	launch --pool-service --socket "$work/zvmmd.sock" >/dev/null # warm-up
	zd0=$(cpu_of "$zpid")
	zc=0
	zr=""
	measuring=1
	for i in $(seq "$N"); do
		# The launches' own CPU time, not the status polls' between them.
		cpu_mark
		c0=$(cpu_read)
		zr+=" $(launch --pool-service --socket "$work/zvmmd.sock" --policy configs/demand.conf)"
		cpu_mark
		zc=$(awk "BEGIN {print $zc + $(cpu_read) - $c0}")
		# As a host between launches: zvmmd refills while nothing runs, to
		# its high watermark; a launch that finds no chunk says '*'.
		for _ in $(seq 500); do
			"$ZVMM" pool status --socket "$work/zvmmd.sock" --json - 2>/dev/null |
				grep -q '"zero_bytes":3221225472,"filling_bytes":0' && break
			sleep 0.05
		done
	done
	measuring=0
	zcpu=$(awk "BEGIN {print $(cpu_of "$zpid") - $zd0}")

	# --- warm pool, scrubbed at each exit
	mkdir -p "$work/mnt"
	mount -t hugetlbfs -o pagesize="$PAGE" none "$work/mnt"
	launch --pool "$work/mnt/pool" --set pool.on_exit=scrub >/dev/null # warm-up
	cpu_mark
	c0=$(cpu_read)
	wr=""
	measuring=1
	for i in $(seq "$N"); do
		wr+=" $(launch --pool "$work/mnt/pool" --set pool.on_exit=scrub --policy configs/demand.conf)"
	done
	measuring=0
	cpu_mark
	wc=$(awk "BEGIN {print $(cpu_read) - $c0}")
	rm -f "$work/mnt/pool"

	# --- QEMU, hugetlb preallocation
	cpu_mark
	c0=$(cpu_read)
	qr=""
	for i in $(seq "$N"); do
		t0=$(now_us)
		got=""
		while IFS= read -r line; do
			case $line in ZVMM-REPORT*) [ -z "$got" ] && got=$(($(now_us) - t0)) ;; esac
		done < <(qemu-system-x86_64 -M microvm,x-option-roms=off,memory-backend=m0 \
			-cpu qemu64 -accel kvm -m 1G \
			-object "memory-backend-memfd,id=m0,size=1G,hugetlb=on,hugetlbsize=$PAGE,prealloc=on" \
			-nodefaults -nographic -serial stdio \
			-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
			-kernel "$ELF" -append "$CMDLINE" 2>/dev/null)
		qr+=" $(awk "BEGIN {print ${got:-0} / 1000}")"
	done
	cpu_mark
	qc=$(awk "BEGIN {print $(cpu_read) - $c0}")

	printf '%-10s %9s %9s %9s %12s %s\n' "way" "median ms" "min ms" "max ms" "host CPU s" "every launch (ms)"
	row() {
		local v=${2//\*/}
		printf '%-10s %9.1f %9.1f %9.1f %12s %s\n' "$1" "$(echo "$v" | median)" \
			"$(echo "$v" | tr ' ' '\n' | grep -v '^$' | sort -g | head -1)" \
			"$(echo "$v" | tr ' ' '\n' | grep -v '^$' | sort -g | tail -1)" "$3" "$2"
	}
	row zvmmd "$zr" "$(awk "BEGIN {printf \"%.2f+%.2f\", $zc, $zcpu}")"
	row "warm pool" "$wr" "$(printf '%.2f' "$wc")"
	row qemu "$qr" "$(printf '%.2f' "$qc")"
	echo "ready: zvmm's launch.ready_ms (start to first vCPU entry); qemu: exec to the guest's report (an upper bound)"
	echo "host CPU s: the launching processes' user+system; zvmmd's row adds zvmmd's own (its filling) after the +"
	echo "*: zvmmd had no zeroed chunk for that launch (it got holes the kernel zeroes at first touch)"
	if [ -s "$work/slow" ]; then
		echo "launches over 5 ms, and their phases (ms):"
		sed 's/--pool-service --socket [^ ]*/zvmmd/; s/--pool [^ ]* --set pool.on_exit=scrub/warm pool/; s/ --policy configs\/demand.conf//' "$work/slow"
	fi

	touch_part
}

# --- a running guest's touch rate: zvmmd filling at idle vs an idle host
touch_rate() {
	local json=$work/touch.json
	local b m
	"$ZVMM" run --mem 1G --hugepages 2M --policy configs/prezero.conf \
		--cmdline "stride=64K verify=8" --quiet --json "$json" >/dev/null 2>&1 || return
	b=$(grep -o '"touched_bytes": [0-9]*' "$json" | awk '{print $2}')
	m=$(grep -o '"touch_ms": [0-9.]*' "$json" | awk '{print $2}')
	awk "BEGIN {if (${m:-0} > 0) printf \"%.3f\", ${b:-0} / ${m:-0} / 1e6; else print \"nan\"}"
}
touch_part() {
	idle=""
	busy=""
	for _ in 1 2 3; do
		idle+=" $(touch_rate)"
	done
	# zvmmd filling while the guest runs: started empty each time, it fills
	# its 3 GiB at idle priority, capped at 1 GB/s, over about 3 s of the
	# guest's run.
	zvmmd_conf "$work/busy.conf" "pages.$PAGE" 3G 3G 4G 1G
	for _ in 1 2 3; do
		zvmmd_start "$work/busy.conf"
		busy+=" $(touch_rate)"
	done
	printf 'touch rate of a 1 GiB guest, one write per 64 KiB (GB/s of memory walked, median of 3): idle host %s, zvmmd filling 3 GiB at idle %s\n' \
		"$(echo "$idle" | median)" "$(echo "$busy" | median)"
}

# --- without KVM: the storm's memory side, libzvmm tenants
# One tenant launch ("$@" says the way): its ready ms, '*' after it when
# zvmmd leased it no zeroed chunk; its touch ms, and ready + touch, appended
# to $work/touch and $work/total.
tenant() {
	local got
	"$TENANT" --mem 1024 --page "$PAGE" --policy configs/demand.conf \
		--set "zeroing.profile=$work/cache/calibration.ini" \
		--set "pool.state_dir=$work/state" "$@" >"$work/tenant.out" \
		2>"$work/err" ||
		{ echo "storm.sh: a tenant failed: $(cat "$work/err")" >&2; exit 1; }
	read -r -a got <"$work/tenant.out"
	echo "${got[1]}" >>"$work/touch"
	awk "BEGIN {print ${got[0]} + ${got[1]}}" >>"$work/total"
	printf '%s' "${got[0]}"
	[ "${got[2]}" = 0 ] || printf '*'
	echo
}
zvmmd_full() {
	for _ in $(seq 600); do
		"$ZVMM" pool status --socket "$work/zvmmd.sock" --json - 2>/dev/null |
			grep -q "$1" && break
		sleep 0.05
	done
}
tenant_part() {
	local n=$(((6 << 30) / $([ "$PAGE" = 1G ] && echo $((1 << 30)) || echo $((2 << 20)))))
	raise "$gp" "$n"
	if [ "$(cat "${gp%nr_hugepages}free_hugepages")" -lt "$n" ]; then
		echo "storm.sh: skipped: the storm's memory side: the kernel could not reserve 6 GiB of $PAGE pages (memory fragmented: reserve them early, or at boot)"
		return 0
	fi
	printf 'launch storm, memory side (no usable /dev/kvm: %s): %d launches of a libzvmm tenant opening 1 GiB of %s pages, each touching every 2 MiB; %s; Linux %s\n' \
		"$no_kvm" "$N" "$PAGE" \
		"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
		"$(uname -r)"
	# The tenants' backend = auto reads a profile of this run's.
	ZVMM_CACHE_DIR=$work/cache ZVMM_STATE_DIR=$work/state \
		"$ZVMM" calibrate --quiet >/dev/null 2>"$work/err" ||
		{ echo "storm.sh: zvmm calibrate failed: $(cat "$work/err")" >&2; exit 1; }
	local -A ready touch total cpu
	local way c0

	# --- zvmmd, filled to high before the storm and after each launch
	mkdir -p "$work/chunks"
	zvmmd_conf "$work/zvmmd.conf" "pages.$PAGE" 3G 3G 4G
	zvmmd_start "$work/zvmmd.conf"
	zvmmd_full '"zero_bytes":3221225472'
	tenant --service "$work/zvmmd.sock" >/dev/null # warm-up
	zvmmd_full '"zero_bytes":3221225472,"filling_bytes":0'
	: >"$work/touch"
	: >"$work/total"
	zd0=$(cpu_of "$zpid")
	zc=0
	zr=""
	for _ in $(seq "$N"); do
		# The tenants' own CPU time, not the status polls' between them.
		cpu_mark
		c0=$(cpu_read)
		zr+=" $(tenant --service "$work/zvmmd.sock")"
		cpu_mark
		zc=$(awk "BEGIN {print $zc + $(cpu_read) - $c0}")
		zvmmd_full '"zero_bytes":3221225472,"filling_bytes":0'
	done
	zcpu=$(awk "BEGIN {print $(cpu_of "$zpid") - $zd0}")
	zvmmd_stop
	ready[zvmmd]=$zr
	touch[zvmmd]=$(median <"$work/touch")
	total[zvmmd]=$(median <"$work/total")
	cpu[zvmmd]=$(awk "BEGIN {print $zc + $zcpu}")

	# --- warm pool, scrubbed at each exit; then the kernel's own
	mkdir -p "$work/mnt"
	mount -t hugetlbfs -o pagesize="$PAGE" none "$work/mnt"
	for way in "warm pool" kernel; do
		local args=(--pool "$work/mnt/pool" --set pool.on_exit=scrub)
		[ "$way" = kernel ] && args=(--kernel)
		tenant "${args[@]}" >/dev/null # warm-up
		: >"$work/touch"
		: >"$work/total"
		cpu_mark
		c0=$(cpu_read)
		ready[$way]=""
		for _ in $(seq "$N"); do
			ready[$way]+=" $(tenant "${args[@]}")"
		done
		cpu_mark
		cpu[$way]=$(awk "BEGIN {print $(cpu_read) - $c0}")
		touch[$way]=$(median <"$work/touch")
		total[$way]=$(median <"$work/total")
	done
	rm -f "$work/mnt/pool"
	umount "$work/mnt"

	printf '%-10s %9s %9s %11s %9s %14s %9s  %s\n' "way" "ready ms" "touch ms" \
		"ready+touch" "x kernel" "host CPU s" "x kernel" "every launch's ready (ms)"
	for way in zvmmd "warm pool" kernel; do
		local c
		c=$(printf '%.2f' "${cpu[$way]}")
		[ "$way" = zvmmd ] && c=$(printf '%.2f+%.2f' "$zc" "$zcpu")
		printf '%-10s %9.2f %9.2f %11.2f %9.2f %14s %9s %s\n' "$way" \
			"$(echo "${ready[$way]//\*/}" | median)" "${touch[$way]}" \
			"${total[$way]}" \
			"$(awk "BEGIN {print ${total[$way]} / ${total[kernel]}}")" \
			"$c" \
			"$(awk "BEGIN {k = ${cpu[kernel]}; if (k > 0) printf \"%.2f\", ${cpu[$way]} / k; else print \"nan\"}")" \
			"${ready[$way]}"
	done
	echo "ready: in the tenant, open to memory a vCPU may touch (zvmm_guest_open() to zvmm_guest_start(); the kernel: mmap()); touch: every 2 MiB then; medians of $N launches"
	echo "x kernel: the median ready+touch, and the storm's host CPU s, over the kernel row's"
	echo "host CPU s: the tenants' user+system; zvmmd's row adds zvmmd's own (its filling) after the +"
	echo "*: zvmmd had no zeroed chunk for that launch (it got holes the kernel zeroes at first touch)"
}

if [ -n "$no_kvm" ]; then
	echo "storm.sh: skipped: a running guest's touch rate, and the storm's launches of guests: no usable /dev/kvm ($no_kvm)"
	tenant_part
else
	storm_part
fi

# --- a busy vCPU's memory bandwidth: idle host, zvmmd filling beside it
# One writer on CPU 0 over 1 GiB (past any LLC we have met) for 2 s; once
# it is warm, zvmmd starts empty and fills 8 GiB of 2 MiB pages (longer
# than the window at the kernel's clearing rate), without a rate cap,
# then capped at 1 GB/s. Median of 3 each; the filled bytes say how far
# the filler got by the end.
# In this shell, not a $(...) subshell: a zvmmd started there would hold
# the substitution's pipe open. Appends "GB/s filled-bytes" to $2.
bw_run() {
	local conf=$1 out=$2 f=0 mpid
	taskset -c 0 "$MEMBW" 2 $((1 << 30)) >"$work/bw.out" &
	mpid=$!
	for _ in $(seq 1000); do grep -q warm "$work/bw.out" && break; sleep 0.01; done
	if [ -n "$conf" ]; then
		# Not zvmmd_start: the writer is already timing, no wait here.
		"$ZVMMD" --config "$conf" >/dev/null 2>>"$work/zvmmd.log" &
		zpid=$!
	fi
	wait "$mpid"
	if [ -n "$conf" ]; then
		f=$("$ZVMM" pool status --socket "$work/zvmmd.sock" --json - 2>/dev/null |
			grep -o '"scrubbed_bytes":[0-9]*' | head -1 | cut -d: -f2)
		zvmmd_stop
	fi
	echo "$(tail -1 "$work/bw.out") ${f:-0}" >>"$out"
}
zvmmd_stop
zvmmd_conf "$work/bw.conf" pages.2M 8G 8G 8G
zvmmd_conf "$work/bwcap.conf" pages.2M 8G 8G 8G 1G
for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done
raise "$g2" 4096
: >"$work/bw.idle"
: >"$work/bw.fill"
: >"$work/bw.cap"
for _ in 1 2 3; do
	bw_run "" "$work/bw.idle"
done
for _ in 1 2 3; do
	bw_run "$work/bw.conf" "$work/bw.fill"
done
for _ in 1 2 3; do
	bw_run "$work/bwcap.conf" "$work/bw.cap"
done
zvmmd_stop
mi=$(awk '{print $1}' "$work/bw.idle" | median)
mf=$(awk '{print $1}' "$work/bw.fill" | median)
mc=$(awk '{print $1}' "$work/bw.cap" | median)
ff=$(awk '{print $2 / 2^30}' "$work/bw.fill" | median)
fc=$(awk '{print $2 / 2^30}' "$work/bw.cap" | median)
printf 'memory bandwidth of a busy vCPU (one core writing 1 GiB over and over, GB/s, median of 3): idle host %s; zvmmd filling on the other core %s (%.2fx, %s GiB filled meanwhile); capped at [scrub] rate = 1G %s (%.2fx, %s GiB filled)\n' \
	"$mi" "$mf" "$(awk "BEGIN {print $mf / $mi}")" "$ff" \
	"$mc" "$(awk "BEGIN {print $mc / $mi}")" "$fc"
