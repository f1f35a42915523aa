#!/usr/bin/env bash
# Demand and hybrid zeroing, measured on this machine in one run (root):
#  1. launch.ready_ms with demand and hybrid on a warm poisoned pool, for
#     2 GiB and 16 GiB: launch time should not grow with memory size;
#  2. demand fault latency (fault read to UFFDIO_CONTINUE) for 2 MiB pages
#     while hybrid background workers are busy (rate-limited so they are
#     still running while the guest faults), and the chunk in use;
#  2b. a whole 2 MiB demand fault (p50, demand policy) against the time
#     to clear 2 MiB at limit:write with one thread (zvmm bench), <= 1.3x;
#  3. a 1 GiB demand fault against clearing 1 GiB with all workers at the
#     engine's own scrub rate, measured just before by `zvmm prezero`;
#  4. guest touch time on a warm 16 GiB pool: prezero, demand, hybrid and a
#     relaunch after on_exit=scrub;
#  5. the same zvmm as an unprivileged user (uid 65534: /dev/kvm and
#     /dev/userfaultfd by group in a mount namespace of its own, a
#     hugetlbfs mount with uid=, the hugepages reserved by root) next to
#     root: ready_ms and fault latency, demand and hybrid, interleaved.
# Every pool is poisoned (bench/tools/poison.c) before each run, and the
# memory is warmed by an untimed run first. Median of REPS (default 3).
# Every section boots guests: it needs a usable /dev/kvm. Section 3 needs
# 1 GiB pages, and is skipped, saying so, where the kernel has none.
set -euo pipefail
cd "$(dirname "$0")/.."

ZVMM=${ZVMM:-build/zvmm}
POISON=${POISON:-build/bench/poison}
REPS=${REPS:-3}
BIG=${BIG:-16}

[ "$(id -u)" = 0 ] || { echo "demand.sh: run as root" >&2; exit 3; }
[ -x "$ZVMM" ] && [ -x "$POISON" ] || { echo "demand.sh: run make bench-demand" >&2; exit 2; }
. bench/kvm.sh
no_kvm=$(kvm_unusable)
if [ -n "$no_kvm" ]; then
	echo "demand.sh: every section boots guests (zvmm run), which needs a usable /dev/kvm: $no_kvm; without it, make bench-smoke or zvmm bench measure the zeroing engine" >&2
	exit 3
fi

MNT=$(mktemp -d /tmp/zvmm-bench.XXXXXX)
# The state and the calibration profile are the run's own: root's launches
# would keep theirs in /var/lib/zvmm and /var/cache/zvmm, the host's.
export ZVMM_STATE_DIR=$MNT.state ZVMM_CACHE_DIR=$MNT.cache
declare -A saved
for f in /sys/kernel/mm/hugepages/hugepages-*/nr_hugepages; do saved[$f]=$(cat "$f"); done
cleanup() {
	rm -f "$MNT"/pool 2>/dev/null || true
	umount "$MNT" 2>/dev/null || true
	rmdir "$MNT" 2>/dev/null || true
	rm -rf "$ZVMM_STATE_DIR" "$ZVMM_CACHE_DIR"
	rm -f "$MNT".user/pool 2>/dev/null || true
	umount "$MNT".user 2>/dev/null || true
	rmdir "$MNT".user "$MNT".dev 2>/dev/null || true
	rm -rf "$MNT".home "$MNT".bin
	for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done
}
trap cleanup EXIT INT TERM

sysfs() { echo /sys/kernel/mm/hugepages/hugepages-$([ "$1" = 1G ] && echo 1048576 || echo 2048)kB/nr_hugepages; }

# mount PAGE GIB: a fresh hugetlbfs mount with GIB of PAGE pages reserved
setup() {
	umount "$MNT" 2>/dev/null || true
	for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done
	local f n
	f=$(sysfs "$1")
	n=$(( ($2 << 30) / $([ "$1" = 1G ] && echo $((1 << 30)) || echo $((2 << 20))) ))
	echo 1 > /proc/sys/vm/compact_memory
	echo $(( ${saved[$f]} + n )) >"$f"
	mount -t hugetlbfs -o pagesize="$1" none "$MNT"
}

json() { grep -o "\"$2\": [0-9.]*" "$1" | head -1 | awk '{print $2}'; }
section() { grep -o "\"$2\": {[^}]*" "$1" | grep -o "\"$3\": [0-9.]*" | head -1 | awk '{print $2}'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}'; }

# run GIB PAGE POLICY [SETS...]: poison the pool, run, leave JSON in $OUT
OUT=$(mktemp)
run() {
	local gib=$1 page=$2 pol=$3
	shift 3
	"$POISON" "$MNT/pool" $((gib << 30))
	"$ZVMM" run --mem "${gib}G" --hugepages "$page" --pool "$MNT/pool" \
		--policy "configs/$pol.conf" --set pool.on_exit=keep "$@" \
		--quiet --json "$OUT" >/dev/null
}

echo "== 1. launch.ready_ms, warm poisoned pool, 2M pages (median of $REPS)"
printf '%-8s %6s %12s\n' policy GiB ready_ms
for gib in 2 "$BIG"; do
	setup 2M "$gib"
	run "$gib" 2M prezero >/dev/null # warm
	for pol in demand hybrid; do
		v=""
		for _ in $(seq "$REPS"); do run "$gib" 2M "$pol"; v+=" $(json "$OUT" ready_ms)"; done
		printf '%-8s %6s %12s\n' "$pol" "$gib" "$(echo "$v" | median)"
	done
done

echo "== 2. 2 MiB demand fault latency while hybrid background runs (4 GiB/s limit)"
setup 2M "$BIG"
run "$BIG" 2M prezero
run "$BIG" 2M hybrid --set zeroing.rate_limit=4G
printf 'faults %s, background %s bytes in %s s, chunk %s bytes; latency us p50 %s p99 %s max %s\n' \
	"$(section "$OUT" demand faults)" "$(section "$OUT" background bytes)" \
	"$(section "$OUT" background seconds)" "$(json "$OUT" chunk_bytes)" \
	"$(json "$OUT" p50)" "$(json "$OUT" p99)" "$(json "$OUT" max)"

echo "== 2b. a whole 2 MiB demand fault (userfaultfd included) against clearing 2 MiB at limit:write, 1 thread"
# The target of docs/DESIGN.md 5 ("The demand path"): p50 <= 1.3x the
# ceiling's time for the page, both measured in this run.
umount "$MNT" 2>/dev/null || true # zvmm bench reserves its own pages
for f in "${!saved[@]}"; do echo "${saved[$f]}" >"$f"; done
"$ZVMM" bench --size 2G --reps "$REPS" --quiet --json "$OUT.bench" >/dev/null 2>&1
lim=$(grep -o '"method": "limit:write"[^}]*"threads": 1, "gbps": [0-9.]*' "$OUT.bench" | grep -o '[0-9.]*$' | head -1)
rm -f "$OUT.bench"
setup 2M 4
run 4 2M prezero >/dev/null # warm
lat=""
for _ in $(seq "$REPS"); do run 4 2M demand; lat+=" $(json "$OUT" p50)"; done
lat=$(echo "$lat" | median)
if [ -z "$lim" ]; then
	echo "no limit:write row with 1 thread from zvmm bench: no verdict"
else
	awk -v l="$lat" -v g="$lim" 'BEGIN {
		t = 2097152 / (g * 1e9) * 1e6
		printf "target: 2 MiB demand fault p50 / 2 MiB at limit:write, 1 thread (%.1f GB/s): %.1f / %.1f us = %.2f (<= 1.3: %s)\n", g, l, t, l / t, l / t <= 1.3 ? "met" : "MISSED" }'
fi

echo "== 3. 1 GiB demand fault against clearing 1 GiB at the engine's rate"
if [ ! -e "$(sysfs 1G)" ]; then
	echo "skipped: the kernel has no 1 GiB hugetlb pool (no $(dirname "$(sysfs 1G)"))"
else
	setup 1G 4
	rate=""
	for _ in $(seq "$REPS"); do
		# The first pass over newly mapped pages is slower: take the median.
		"$POISON" "$MNT/pool" $((4 << 30))
		"$ZVMM" prezero --mem 4G --hugepages 1G --pool "$MNT/pool" --quiet \
			--json "$OUT" >/dev/null 2>&1
		rate+=" $(section "$OUT" prezero gbps)"
	done
	rate=$(echo "$rate" | median)
	workers=$(json "$OUT" workers)
	lat=""
	for _ in $(seq "$REPS"); do run 4 1G demand; lat+=" $(json "$OUT" p50)"; done
	lat=$(echo "$lat" | median)
	awk -v l="$lat" -v r="$rate" -v w="$workers" 'BEGIN {
		t = 1073741824 / (r * 1e9) * 1e6
		printf "1 GiB fault %.0f us (median p50); 1 GiB at %.1f GB/s with %d workers: %.0f us; ratio %.2fx\n", l, r, w, t, l / t }'
fi

echo "== 4. guest touch time, warm ${BIG} GiB pool, 2M pages, stride 2M (median of $REPS)"
setup 2M "$BIG"
printf '%-16s %10s %10s %8s\n' method touch_ms ready_ms faults
for pol in prezero demand hybrid; do
	t=""; r=""; f=""
	for _ in $(seq "$REPS"); do
		run "$BIG" 2M "$pol"
		t+=" $(json "$OUT" touch_ms)"; r+=" $(json "$OUT" ready_ms)"; f+=" $(section "$OUT" demand faults)"
	done
	printf '%-16s %10s %10s %8s\n' "$pol" "$(echo "$t" | median)" "$(echo "$r" | median)" "$(echo "$f" | median)"
done
t=""; r=""; f=""
for _ in $(seq "$REPS"); do
	run "$BIG" 2M demand --set pool.on_exit=scrub
	"$ZVMM" run --mem "${BIG}G" --pool "$MNT/pool" --policy configs/demand.conf \
		--set pool.on_exit=keep --quiet --json "$OUT" >/dev/null
	t+=" $(json "$OUT" touch_ms)"; r+=" $(json "$OUT" ready_ms)"; f+=" $(section "$OUT" demand faults)"
done
printf '%-16s %10s %10s %8s\n' "scrub+relaunch" "$(echo "$t" | median)" "$(echo "$r" | median)" "$(echo "$f" | median)"

echo "== 5. as a user (uid 65534, /dev/userfaultfd by group) and as root, 2 GiB warm poisoned pools, 2M pages (median of $REPS)"
# The user's devices exist only in its launch's mount namespace: nothing on
# the host changes. zvmm is copied where any user may run it.
mkdir -p "$MNT".user "$MNT".dev "$MNT".home
chown 65534:65534 "$MNT".home
install -m 0755 "$ZVMM" "$MNT".bin
kvm_dev=$(stat -c '%t %T' /dev/kvm)
as_user() {
	unshare -m --propagation private bash -c '
		d=$1 h=$2; shift 2
		mount -t tmpfs -o mode=0755 none "$d" &&
		mknod -m 0660 "$d/kvm" c $((16#${KVM% *})) $((16#${KVM#* })) &&
		mknod -m 0660 "$d/uffd" c 10 257 &&
		chgrp 64991 "$d/kvm" && chgrp 64990 "$d/uffd" &&
		mount --bind "$d/kvm" /dev/kvm &&
		mount --bind "$d/uffd" /dev/userfaultfd &&
		exec setpriv --reuid=65534 --regid=65534 --groups=64990,64991 -- \
			env -i PATH=/usr/bin:/bin HOME="$h" "$@"' \
		- "$MNT".dev "$MNT".home "$@"
}
setup 2M 4
mount -t hugetlbfs -o pagesize=2M,uid=65534,gid=65534,mode=0700 none "$MNT".user
# urun WHO POLICY: poison WHO's pool, launch, JSON in $OUT
urun() {
	local pool=$MNT/pool
	[ "$1" = user ] && pool=$MNT.user/pool
	"$POISON" "$pool" $((2 << 30))
	if [ "$1" = user ]; then
		chown 65534:65534 "$pool"
		KVM=$kvm_dev as_user "$MNT".bin run --mem 2G --pool "$pool" \
			--set zeroing.mode="$2" --set pool.on_exit=keep \
			--quiet --json - 2>/dev/null >"$OUT"
	else
		"$ZVMM" run --mem 2G --pool "$pool" --set zeroing.mode="$2" \
			--set pool.on_exit=keep --quiet --json - 2>/dev/null >"$OUT"
	fi
}
# Warm both pools; the first hybrid launch of each user measures the
# backends and keeps its profile, as a user's first launch would.
for pol in demand hybrid; do urun user "$pol"; urun root "$pol"; done
printf '%-8s %-6s %10s %8s %8s %8s\n' policy who ready_ms p50_us p99_us nonzero
for pol in demand hybrid; do
	declare -A rd=() p5=() p9=() nz=()
	for _ in $(seq "$REPS"); do
		for who in user root; do
			urun "$who" "$pol"
			rd[$who]+=" $(json "$OUT" ready_ms)"
			p5[$who]+=" $(json "$OUT" p50)"
			p9[$who]+=" $(json "$OUT" p99)"
			nz[$who]+=" $(json "$OUT" nonzero_bytes)"
		done
	done
	for who in user root; do
		printf '%-8s %-6s %10s %8s %8s %8s\n' "$pol" "$who" \
			"$(echo "${rd[$who]}" | median)" "$(echo "${p5[$who]}" | median)" \
			"$(echo "${p9[$who]}" | median)" "$(echo "${nz[$who]}" | median)"
	done
	awk -v u="$(echo "${rd[user]}" | median)" -v r="$(echo "${rd[root]}" | median)" \
		-v pu="$(echo "${p5[user]}" | median)" -v pr="$(echo "${p5[root]}" | median)" -v pol="$pol" \
		'BEGIN { f = pr > 0 ? sprintf("%.2fx", pu / pr) : "- (no faults)"
			printf "%s user/root: ready %.2fx, fault p50 %s\n", pol, u / r, f }'
done
rm -f "$OUT"
