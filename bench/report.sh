#!/usr/bin/env bash
# bench/report.sh DIR: turns the samples bench/suite.sh left in DIR
# (raw.tsv, machine.tsv, backends.json, backends.txt) into DIR/report.md,
# DIR/suite.json and the plots DIR/launch-*.svg and DIR/latency.svg
# (DIR/bench-gbps.svg comes from `zvmm bench --plot`). Every number is a
# median over the repetitions with min-max beside it; every ratio is
# computed from numbers of the same run. Needs awk and gnuplot.
set -euo pipefail
DIR=${1:?usage: bench/report.sh DIR}
[ -f "$DIR/raw.tsv" ] && [ -f "$DIR/machine.tsv" ] ||
	{ echo "report.sh: $DIR has no raw.tsv/machine.tsv (run bench/suite.sh)" >&2; exit 2; }

# 1. Medians: section method page gib chunk metric n median min max.
awk -F'\t' 'NR > 1 && $8 != "" && $8 != "nan" {
	k = $1 "\t" $2 "\t" $3 "\t" $4 "\t" $5 "\t" $7
	if (!(k in n)) order[++nk] = k
	v[k, ++n[k]] = $8 + 0
}
END {
	for (i = 1; i <= nk; i++) {
		k = order[i]; m = n[k]
		for (a = 1; a <= m; a++) s[a] = v[k, a]
		for (a = 2; a <= m; a++)	# insertion sort: a few values
			for (b = a; b > 1 && s[b - 1] > s[b]; b--) {
				t = s[b]; s[b] = s[b - 1]; s[b - 1] = t
			}
		med = m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
		printf "%s\t%d\t%.6g\t%.6g\t%.6g\n", k, m, med, s[1], s[m]
	}
}' "$DIR/raw.tsv" >"$DIR/summary.tsv"

# 2. The report, the JSON and the plot data, from one awk program.
awk -F'\t' -v dir="$DIR" '
function med(sec, meth, pg, gib, ch, met,   k) {
	k = sec SUBSEP meth SUBSEP pg SUBSEP gib SUBSEP ch SUBSEP met
	return (k in M) ? M[k] : ""
}
function rng(sec, meth, pg, gib, ch, met,   k) {
	k = sec SUBSEP meth SUBSEP pg SUBSEP gib SUBSEP ch SUBSEP met
	return (k in M) ? sprintf("%.1f (%.1f-%.1f)", M[k], LO[k], HI[k]) : "-"
}
function f1(x) { return x == "" ? "-" : sprintf("%.1f", x) }
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "" : a / b }
function fx(x) { return x == "" ? "-" : sprintf("%.2fx", x) }
function jnum(x) { return x == "" ? "null" : sprintf("%.6g", x) }
function verdict(ok, how) { return (ok ? "**met**" : "**missed**") " " how }
# Least squares y = a + b x over the sizes measured for one method.
function fit(meth, pg, met,   i, x, y, n, sx, sy, sxx, sxy, syy, d) {
	n = sx = sy = sxx = sxy = syy = 0
	for (i = 1; i <= nsizes; i++) {
		x = sizes[i]; y = med("launch", meth, pg, x, "-", met)
		if (y == "") continue
		n++; sx += x; sy += y; sxx += x * x; sxy += x * y; syy += y * y
	}
	FN = n; FA = FB = FR = ""
	if (n < 2) return 0
	d = n * sxx - sx * sx
	if (d == 0) return 0
	FB = (n * sxy - sx * sy) / d
	FA = (sy - FB * sx) / n
	d = (n * sxx - sx * sx) * (n * syy - sy * sy)
	FR = d > 0 ? (n * sxy - sx * sy) ^ 2 / d : 1
	return 1
}
FILENAME ~ /machine.tsv$/ && $1 == "skip" { SK[++nsk] = $2; next }
FILENAME ~ /machine.tsv$/ { MI[$1] = $2; next }
FILENAME ~ /summary.tsv$/ {
	k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5 SUBSEP $6
	M[k] = $8; LO[k] = $9; HI[k] = $10; N[k] = $7
	row[++nrow] = $0
	# What was measured at all: a machine without KVM has no launches.
	HAS[$1]; HAS[$1, $3]
	next
}
FILENAME ~ /backends.json$/ {
	if (match($0, /"method": "[^"]*"/)) {
		meth = substr($0, RSTART + 11, RLENGTH - 12)
		match($0, /"page_bytes": [0-9]+/); pb = substr($0, RSTART + 14, RLENGTH - 14)
		match($0, /"extent_bytes": [0-9]+/); eb = substr($0, RSTART + 16, RLENGTH - 16)
		match($0, /"threads": [0-9]+/); th = substr($0, RSTART + 11, RLENGTH - 11)
		match($0, /"gbps": [0-9.]+/); g = substr($0, RSTART + 8, RLENGTH - 8)
		match($0, /"gbps_min": [0-9.]+/); gl = substr($0, RSTART + 12, RLENGTH - 12)
		match($0, /"gbps_max": [0-9.]+/); gh = substr($0, RSTART + 12, RLENGTH - 12)
		B[meth, pb, eb, th] = g; BL[meth, pb, eb, th] = gl; BH[meth, pb, eb, th] = gh
		if (meth == "limit:write") {
			LIMPAGE = pb; LIMEXT = eb
			if (match($0, /"backend": "[^"]*"/)) LIMBACK = substr($0, RSTART + 12, RLENGTH - 13)
		}
		if (meth ~ /^backend:/ && th == 1) {
			if (!(meth in seenb)) { seenb[meth]; bm[++nbm] = meth }
			if (!(eb in seene)) { seene[eb]; be[++nbe] = eb; }
			bpage = pb
		}
	}
	next
}
FILENAME ~ /backends.txt$/ { btxt[++nbt] = $0; next }
END {
	nsizes = split(MI["sizes"], sizes, " ")
	npages = split(MI["pages"], pages, " ")
	nchunks = split(MI["chunks"], chunks, " ")
	nm = split("zvmm-prezero-fresh zvmm-prezero-warm zvmm-demand-warm zvmm-hybrid-warm zvmm-relaunch-scrubbed qemu-prealloc qemu-noprealloc", meths, " ")
	split("zvmm prezero, fresh memory|zvmm prezero, warm poisoned pool|zvmm demand, warm poisoned pool|zvmm hybrid, warm poisoned pool|zvmm relaunch after on_exit=scrub|QEMU prealloc=on|QEMU prealloc=off", mlabel, "|")
	big = sizes[nsizes]
	md = dir "/report.md"

	printf "# zvmm benchmark report\n\n" >md
	printf "Produced by `make bench` (bench/suite.sh%s) on %s.\n", MI["smoke"] ? " --smoke: one small size, one run per point; not for conclusions" : "", MI["date"] >md
	printf "Every number is the median of %s runs on warm memory with min-max in brackets; every ratio is computed from numbers of this run.\n\n", MI["reps"] >md
	printf "| machine | |\n|---|---|\n" >md
	printf "| host | %s |\n| CPU | %s, %s CPUs, %s NUMA node(s) |\n| memory | %s GiB |\n| kernel | %s |\n| OS | %s |\n| KVM | %s |\n| QEMU | %s |\n| zvmm | %s |\n| guest | built-in touch.elf, cmdline `%s` |\n\n", MI["host"], MI["cpu"], MI["cpus"], MI["numa_nodes"], MI["mem_gib"], MI["kernel"], MI["os"], MI["kvm"] == "" ? "usable" : MI["kvm"], MI["qemu"], MI["zvmm"], MI["cmdline"] >md
	# What this machine could not run, before any number.
	if (nsk) {
		printf "## Skipped on this machine\n\n" >md
		for (i = 1; i <= nsk; i++) printf "- %s\n", SK[i] >md
		printf "\n" >md
	}

	# Targets first: what the issue asks for, met or missed by how much.
	printf "## Targets\n\n| target | measured | verdict |\n|---|---|---|\n" >md
	if (!("launch" in HAS))
		printf "| the launch targets | no guest launched on this machine (see above) | - |\n" >md
	for (p = 1; p <= npages; p++) {
		pg = pages[p]
		big = largest(pg)
		q = med("launch", "qemu-prealloc", pg, big, "-", "ready_ms")
		for (i = 3; i <= 4; i++) {
			z = med("launch", meths[i], pg, big, "-", "ready_ms")
			r = ratio(q, z)
			if (r == "") continue
			printf "| %s ready >= 10x faster than QEMU prealloc, %s GiB, %s pages | %.1f vs %.1f ms = %.1fx | %s |\n", mlabel[i], big, pg, z, q, r, verdict(r >= 10, r >= 10 ? "" : sprintf("by %.0f%%", (1 - r / 10) * 100)) >md
			T[++nt] = sprintf("{ \"target\": \"%s ready vs QEMU prealloc\", \"page\": \"%s\", \"gib\": %s, \"ratio\": %s, \"goal\": 10, \"met\": %s }", meths[i], pg, big, jnum(r), r >= 10 ? "true" : "false")
		}
		worst = ""; wg = ""
		for (s = 1; s <= nsizes; s++) {
			r = ratio(med("launch", "qemu-prealloc", pg, sizes[s], "-", "ready_ms"), med("launch", "zvmm-prezero-fresh", pg, sizes[s], "-", "ready_ms"))
			if (r != "" && (worst == "" || r < worst)) { worst = r; wg = sizes[s] }
		}
		if (worst != "") {
			printf "| zvmm prezero on fresh memory no slower than QEMU prealloc (%s threads), %s pages | QEMU/zvmm ready at worst %.2fx (%s GiB) | %s |\n", MI["workers_" pg], pg, worst, wg, verdict(worst >= 1, worst >= 1 ? "" : sprintf("zvmm %.0f%% slower at %s GiB", (1 / worst - 1) * 100, wg)) >md
			T[++nt] = sprintf("{ \"target\": \"prezero fresh vs QEMU prealloc\", \"page\": \"%s\", \"worst_ratio\": %s, \"at_gib\": %s, \"goal\": 1, \"met\": %s }", pg, jnum(worst), wg, worst >= 1 ? "true" : "false")
		}
		if (fit("zvmm-prezero-warm", pg, "ready_ms") && FB > 0) {
			zb = 1073.741824 / FB
			if (fit("qemu-prealloc", pg, "ready_ms") && FB > 0) {
				qb = 1073.741824 / FB
				r = zb / qb
				printf "| zvmm prezero of a warm dirty pool >= 3x QEMU prealloc bandwidth of fresh memory, %s pages (slopes of the fits below) | %.1f vs %.1f GB/s = %.2fx | %s |\n", pg, zb, qb, r, verdict(r >= 3, r >= 3 ? "" : sprintf("by %.0f%%", (1 - r / 3) * 100)) >md
				T[++nt] = sprintf("{ \"target\": \"warm prezero vs QEMU prealloc bandwidth\", \"page\": \"%s\", \"zvmm_gbps\": %s, \"qemu_gbps\": %s, \"ratio\": %s, \"goal\": 3, \"met\": %s }", pg, jnum(zb), jnum(qb), jnum(r), r >= 3 ? "true" : "false")
			}
		}
		worst = ""
		for (i = 1; i <= 5; i++) {
			v = med("launch", meths[i], pg, big, "-", "max_rss_kib")
			if (v != "" && (worst == "" || v > worst)) { worst = v; wm = meths[i] }
		}
		if (worst != "") {
			lim = 32 * 1024 + big * 1048576 * 0.001
			printf "| zvmm RSS < 32 MiB + 0.1%% of guest memory, %s GiB, %s pages | %.1f MiB at most (%s); limit %.1f MiB | %s |\n", big, pg, worst / 1024, wm, lim / 1024, verdict(worst < lim, worst < lim ? "" : sprintf("by %.1f MiB", (worst - lim) / 1024)) >md
			T[++nt] = sprintf("{ \"target\": \"zvmm max RSS\", \"page\": \"%s\", \"gib\": %s, \"max_rss_kib\": %s, \"limit_kib\": %s, \"met\": %s }", pg, big, jnum(worst), jnum(lim), worst < lim ? "true" : "false")
		}
	}
	# Every launch fast: the measurement paid once, hybrid overlapping
	# the guest, 2 MiB pages as fast as 1 GiB ones, the write ceiling.
	printf "\n### Every launch fast\n\n| target | measured | verdict |\n|---|---|---|\n" >md
	pg = "1G"; g = MI["profile_gib"]
	a = med("launch", "zvmm-first-no-profile", pg, g, "-", "ready_ms")
	b = med("launch", "zvmm-second-no-profile", pg, g, "-", "ready_ms")
	e = med("launch", "zvmm-first-no-profile", pg, g, "-", "engine_ms")
	if (a != "" && b != "") {
		printf "| no profile, %s GiB warm poisoned pool, 1G pages, hybrid: ready from the second launch on <= 15 ms | first %.1f ms (of it %.1f ms measuring the backends), second %.1f ms | %s |\n", g, a, e, b, verdict(b <= 15, b <= 15 ? "" : sprintf("by %.1f ms", b - 15)) >md
		printf "| no profile: the first launch'"'"'s measurement well under 100 ms | %.1f ms | %s |\n", e, verdict(e < 100, e < 100 ? "" : sprintf("by %.1f ms", e - 100)) >md
		T[++nt] = sprintf("{ \"target\": \"second launch without a profile ready_ms\", \"page\": \"1G\", \"gib\": %s, \"first_ms\": %s, \"measure_ms\": %s, \"second_ms\": %s, \"goal\": 15, \"met\": %s }", g, jnum(a), jnum(e), jnum(b), b <= 15 ? "true" : "false")
	}
	for (p = 1; p <= npages; p++) {
		pg = pages[p]; g = 4
		if (med("launch", "zvmm-prezero-warm", pg, g, "-", "report_ms") == "") g = largest(pg)
		hz = med("launch", "zvmm-hybrid-warm", pg, g, "-", "report_ms")
		pz = med("launch", "zvmm-prezero-warm", pg, g, "-", "report_ms")
		hr = med("launch", "zvmm-hybrid-warm", pg, g, "-", "ready_ms")
		pr = med("launch", "zvmm-prezero-warm", pg, g, "-", "ready_ms")
		r = ratio(hz, pz); q = ratio(hr, pr)
		if (r != "") {
			printf "| hybrid, guest touching every page of a %s GiB poisoned pool, %s pages: exec to report <= prezero'"'"'s | %.1f vs %.1f ms = %.2fx | %s |\n", g, pg, hz, pz, r, verdict(r <= 1, r <= 1 ? "" : sprintf("by %.0f%%", (r - 1) * 100)) >md
			T[++nt] = sprintf("{ \"target\": \"hybrid vs prezero exec to report\", \"page\": \"%s\", \"gib\": %s, \"ratio\": %s, \"goal\": 1, \"met\": %s }", pg, g, jnum(r), r <= 1 ? "true" : "false")
		}
		if (q != "") {
			printf "| hybrid ready <= 0.1x prezero'"'"'s, %s GiB, %s pages | %.1f vs %.1f ms = %.3fx | %s |\n", g, pg, hr, pr, q, verdict(q <= 0.1, q <= 0.1 ? "" : sprintf("at %.2fx", q)) >md
			T[++nt] = sprintf("{ \"target\": \"hybrid ready vs prezero ready\", \"page\": \"%s\", \"gib\": %s, \"ratio\": %s, \"goal\": 0.1, \"met\": %s }", pg, g, jnum(q), q <= 0.1 ? "true" : "false")
		}
		f = med("launch", "zvmm-relaunch-scrubbed", pg, g, "-", "faults")
		if (f != "") {
			printf "| relaunch of a %s GiB pool after on_exit = scrub, %s pages: faults taken | %d | %s |\n", g, pg, f, verdict(f == 0, f == 0 ? "" : sprintf("%d faults", f)) >md
			T[++nt] = sprintf("{ \"target\": \"relaunch after scrub faults\", \"page\": \"%s\", \"gib\": %s, \"faults\": %s, \"goal\": 0, \"met\": %s }", pg, g, jnum(f), f == 0 ? "true" : "false")
		}
		lo = med("launch", "zvmm-demand-warm", pg, sizes[1], "-", "own_phases_ms")
		hi = med("launch", "zvmm-demand-warm", pg, largest(pg), "-", "own_phases_ms")
		ms_lo = med("launch", "zvmm-demand-warm", pg, sizes[1], "-", "memslots_ms")
		ms_hi = med("launch", "zvmm-demand-warm", pg, largest(pg), "-", "memslots_ms")
		r = ratio(hi, lo)
		if (r != "" && largest(pg) != sizes[1]) {
			printf "| zvmm'"'"'s own launch phases flat in size, demand, %s pages: %s to %s GiB <= 1.5x (the kernel'"'"'s memslot creation apart) | %.1f to %.1f ms = %.2fx (memslots %.1f to %.1f ms) | %s |\n", pg, sizes[1], largest(pg), lo, hi, r, ms_lo, ms_hi, verdict(r <= 1.5, r <= 1.5 ? "" : sprintf("at %.2fx", r)) >md
			T[++nt] = sprintf("{ \"target\": \"own launch phases flat\", \"page\": \"%s\", \"ratio\": %s, \"goal\": 1.5, \"met\": %s }", pg, jnum(r), r <= 1.5 ? "true" : "false")
		}
	}
	# zvmm bench rows: every worker, 2M chunks.
	wmax = 0
	for (k in B) {
		split(k, kk, SUBSEP)
		if (kk[1] == "pool:prezero" && kk[4] + 0 > wmax) wmax = kk[4] + 0
	}
	a = B["pool:prezero", 2097152, 2097152, wmax]
	b = B["pool:prezero", 1073741824, 2097152, wmax]
	lim = B["limit:write", LIMPAGE, LIMEXT, wmax]
	r = ratio(a, b)
	if (r != "") {
		printf "| `zvmm bench` pool:prezero, %d workers, 2M chunks: 2M pages / 1G pages >= 0.95 | %.1f / %.1f GB/s = %.2f | %s |\n", wmax, a, b, r, verdict(r >= 0.95, r >= 0.95 ? "" : sprintf("by %.0f%%", (0.95 - r) * 100)) >md
		T[++nt] = sprintf("{ \"target\": \"pool:prezero 2M vs 1G pages\", \"workers\": %d, \"ratio\": %s, \"goal\": 0.95, \"met\": %s }", wmax, jnum(r), r >= 0.95 ? "true" : "false")
	}
	for (p = 1; p <= 2; p++) {
		pb = p == 1 ? 2097152 : 1073741824
		a = B["pool:prezero", pb, 2097152, wmax]
		r = ratio(a, lim)
		if (r == "") continue
		printf "| `zvmm bench` pool:prezero %s pages / limit:write (%d threads, %s) >= 0.9 | %.1f / %.1f GB/s = %.2f | %s |\n", hum(pb), wmax, LIMBACK, a, lim, r, verdict(r >= 0.9, r >= 0.9 ? "" : sprintf("by %.0f%%", (0.9 - r) * 100)) >md
		T[++nt] = sprintf("{ \"target\": \"pool:prezero vs limit:write\", \"page\": \"%s\", \"workers\": %d, \"ratio\": %s, \"goal\": 0.9, \"met\": %s }", hum(pb), wmax, jnum(r), r >= 0.9 ? "true" : "false")
		# The demand targets (docs/DESIGN.md 5, "The demand path").
		a = ""; a1 = ""
		for (k in B) {
			split(k, kk, SUBSEP)
			if (kk[1] == "pool:demand" && kk[2] == pb && kk[4] == wmax) a = B[k]
			if (kk[1] == "pool:demand" && kk[2] == pb && kk[4] == 1) a1 = B[k]
		}
		lim1 = ""
		for (k in B) {
			split(k, kk, SUBSEP)
			if (kk[1] == "limit:write" && kk[4] == 1) lim1 = B[k]
		}
		r = ratio(a1, lim1)
		if (r != "") {
			printf "| `zvmm bench` pool:demand %s pages, 1 worker / limit:write (1 thread) >= 0.85 | %.1f / %.1f GB/s = %.2f | %s |\n", hum(pb), a1, lim1, r, verdict(r >= 0.85, r >= 0.85 ? "" : sprintf("by %.0f%%", (0.85 - r) * 100)) >md
			T[++nt] = sprintf("{ \"target\": \"pool:demand vs limit:write\", \"page\": \"%s\", \"workers\": 1, \"ratio\": %s, \"goal\": 0.85, \"met\": %s }", hum(pb), jnum(r), r >= 0.85 ? "true" : "false")
		}
		r = ratio(a, lim)
		if (wmax > 1 && r != "") {
			printf "| `zvmm bench` pool:demand %s pages, %d workers / limit:write (%d threads) >= 0.7 | %.1f / %.1f GB/s = %.2f | %s |\n", hum(pb), wmax, wmax, a, lim, r, verdict(r >= 0.7, r >= 0.7 ? "" : sprintf("by %.0f%%", (0.7 - r) * 100)) >md
			T[++nt] = sprintf("{ \"target\": \"pool:demand vs limit:write\", \"page\": \"%s\", \"workers\": %d, \"ratio\": %s, \"goal\": 0.7, \"met\": %s }", hum(pb), wmax, jnum(r), r >= 0.7 ? "true" : "false")
		}
		r = ratio(a, a1)
		if (wmax > 1 && r != "") {
			how = r >= 1.3 ? "" : sprintf("by %.0f%%", (1.3 - r) * 100)
			# One thread may already write at the ceiling of the memory.
			if (r < 1.3 && lim1 != "" && lim / lim1 < 1.3)
				how = how sprintf("; not reachable here: limit:write scales %.2fx from 1 to %d threads", lim / lim1, wmax)
			printf "| `zvmm bench` pool:demand %s pages, %d workers / 1 worker >= 1.3 | %.1f / %.1f GB/s = %.2f | %s |\n", hum(pb), wmax, a, a1, r, verdict(r >= 1.3, how) >md
			T[++nt] = sprintf("{ \"target\": \"pool:demand workers vs 1\", \"page\": \"%s\", \"workers\": %d, \"ratio\": %s, \"goal\": 1.3, \"met\": %s }", hum(pb), wmax, jnum(r), r >= 1.3 ? "true" : "false")
		}
	}

	if ("launch" in HAS)
		printf "\nReady is exec to the guest'"'"'s ZVMM-BOOT line, which its first instructions write (guest/README.md), timed the same way for zvmm and QEMU; report is exec to its ZVMM-REPORT line. QEMU gets prealloc-threads = zvmm'"'"'s worker count; zvmm reads a calibration profile written by `zvmm calibrate` at the start of the run. Bandwidths are 1 GiB over the slope of the launch-time fit.\n\n" >md
	else
		printf "\n" >md

	# Backends.
	printf "## Backends against the kernel'"'"'s fault zeroing\n\n`zvmm bench` (region and page size below), GB/s, one thread, by extent; kernel rows are hugetlb faults of fresh pages.\n\n" >md
	printf "| method |" >md
	for (e = 1; e <= nbe; e++) printf " %s |", hum(be[e]) >md
	printf " vs kernel:demand 2M at 2M |\n|---|" >md
	for (e = 1; e <= nbe; e++) printf "---|" >md
	printf "---|\n" >md
	kd = B["kernel:demand", 2097152, 2097152, 1]
	for (i = 1; i <= nbm; i++) {
		printf "| %s |", bm[i] >md
		for (e = 1; e <= nbe; e++) {
			g = B[bm[i], bpage, be[e], 1]
			printf " %s |", g == "" ? "-" : sprintf("%.1f", g) >md
		}
		g = B[bm[i], bpage, 2097152, 1]
		printf " %s |\n", fx(ratio(g, kd)) >md
	}
	printf "\n| kernel | 2M pages | 1G pages |\n|---|---|---|\n" >md
	for (k = 1; k <= 2; k++) {
		kn = k == 1 ? "kernel:demand" : "kernel:populate"
		printf "| %s | %s | %s |\n", kn, brng(kn, 2097152), brng(kn, 1073741824) >md
	}
	printf "\n<details><summary>zvmm bench output</summary>\n\n```\n" >md
	for (i = 1; i <= nbt; i++) print btxt[i] >md
	printf "```\n</details>\n\n![GB/s against extent](bench-gbps.svg)\n\n" >md

	# zvmm prezero without a guest (bench/suite.sh without KVM).
	if ("engine" in HAS) {
		printf "## zvmm prezero without a guest\n\nThe engine alone (`zvmm prezero`, no KVM): exec to exit in ms, median (min-max) of %s runs, and the prezero pass'"'"'s GB/s (median). Fresh memory is populated by the workers (the kernel zeroes it); a warm poisoned pool is scrubbed with the profile'"'"'s backend.\n\n", MI["reps"] >md
		for (p = 1; p <= npages; p++) {
			pg = pages[p]
			if (!(("engine", pg) in HAS)) continue
			printf "| %s pages |", pg >md
			for (s = 1; s <= nsizes; s++) printf " %s GiB |", sizes[s] >md
			printf "\n|---|" >md
			for (s = 1; s <= nsizes; s++) printf "---|" >md
			printf "\n" >md
			for (i = 1; i <= 2; i++) {
				em = i == 1 ? "prezero-fresh" : "prezero-warm"
				printf "| %s |", i == 1 ? "fresh memory" : "warm poisoned pool" >md
				for (s = 1; s <= nsizes; s++) {
					g = med("engine", em, pg, sizes[s], "-", "prezero_gbps")
					printf " %s |", rng("engine", em, pg, sizes[s], "-", "wall_ms") (g == "" ? "" : sprintf(", %.1f GB/s", g)) >md
				}
				printf "\n" >md
			}
			printf "\n" >md
		}
	}

	# Launch tables: only for page sizes that had launches.
	for (p = 1; p <= npages; p++) {
		pg = pages[p]
		if (!(("launch", pg) in HAS)) continue
		for (w = 1; w <= 2; w++) {
			met = w == 1 ? "ready_ms" : "report_ms"
			printf "## Launch, %s pages: %s\n\nms, median (min-max) of %s runs.\n\n| method |", pg, w == 1 ? "exec to ready" : "exec to the guest'"'"'s report", MI["reps"] >md
			for (s = 1; s <= nsizes; s++) printf " %s GiB |", sizes[s] >md
			printf "\n|---|" >md
			for (s = 1; s <= nsizes; s++) printf "---|" >md
			printf "\n" >md
			for (i = 1; i <= nm; i++) {
				printf "| %s |", mlabel[i] >md
				for (s = 1; s <= nsizes; s++) printf " %s |", rng("launch", meths[i], pg, sizes[s], "-", met) >md
				printf "\n" >md
			}
			for (i = 1; i <= 5; i++) {
				printf "| QEMU prealloc / %s |", substr(mlabel[i], 6) >md
				for (s = 1; s <= nsizes; s++)
					printf " %s |", fx(ratio(med("launch", "qemu-prealloc", pg, sizes[s], "-", met), med("launch", meths[i], pg, sizes[s], "-", met))) >md
				printf "\n" >md
			}
			printf "\n" >md
		}
		printf "![launch time against memory size, %s pages](launch-%s.svg)\n\n", pg, pg >md
	}

	# Scaling.
	if ("launch" in HAS)
		printf "## Scaling: least-squares fits of launch time against memory size\n\nFitted to the medians above (this machine, %s); 64 GiB and 1 TiB are predictions from these measured points, not measurements.\n\n", MI["cpu"] >md
	if ("launch" in HAS)
		printf "| method | page | metric | points | ms at 0 | ms per GiB | GB/s (1/slope) | R^2 | 64 GiB (predicted) | 1 TiB (predicted) |\n|---|---|---|---|---|---|---|---|---|---|\n" >md
	for (p = 1; p <= npages; p++)
		for (i = 1; i <= nm; i++)
			for (w = 1; w <= 2; w++) {
				met = w == 1 ? "ready_ms" : "report_ms"
				ok = fit(meths[i], pages[p], met)
				if (!FN) continue
				if (!ok) {
					printf "| %s | %s | %s | %d | - | - | - | - | - | - |\n", mlabel[i], pages[p], met, FN >md
					continue
				}
				printf "| %s | %s | %s | %d | %.1f | %.2f | %s | %.3f | %.0f ms | %.1f s |\n", mlabel[i], pages[p], met, FN, FA, FB, (FB > 0.01) ? sprintf("%.1f", 1073.741824 / FB) : "-", FR, FA + 64 * FB, (FA + 1024 * FB) / 1000 >md
				F[++nf] = sprintf("{ \"method\": \"%s\", \"page\": \"%s\", \"metric\": \"%s\", \"points\": %d, \"intercept_ms\": %s, \"ms_per_gib\": %s, \"r2\": %s, \"predicted_64g_ms\": %s, \"predicted_1t_ms\": %s }", meths[i], pages[p], met, FN, jnum(FA), jnum(FB), jnum(FR), jnum(FA + 64 * FB), jnum(FA + 1024 * FB))
			}

	# zvmm itself.
	if ("launch" in HAS)
		printf "\n## zvmm itself at the largest size measured\n\nWall time to the guest'"'"'s report, zvmm'"'"'s CPU time (user + system, all threads) and its peak RSS (hugetlb guest memory is not in RSS: this is zvmm apart from guest memory).\n\n| method | page | GiB | report ms | CPU s | max RSS MiB |\n|---|---|---|---|---|---|\n" >md
	for (p = 1; p <= npages; p++) {
		big = largest(pages[p])
		for (i = 1; i <= 5; i++) {
			v = med("launch", meths[i], pages[p], big, "-", "max_rss_kib")
			if (v == "") continue
			printf "| %s | %s | %s | %s | %s | %.1f |\n", mlabel[i], pages[p], big, f1(med("launch", meths[i], pages[p], big, "-", "report_ms")), sprintf("%.3f", med("launch", meths[i], pages[p], big, "-", "cpu_s")), v / 1024 >md
		}
	}

	# Chunks: one table per page size, the chunks that fit in a page.
	if ("chunk" in HAS)
		printf "\n## Demand-fault latency against chunk size, hybrid background running\n\nA warm poisoned pool; the guest touches top down (`order=down`) while background work clears bottom up, so every fault before they meet needs a scrub, queued behind background chunks. Latency: fault read to UFFDIO_CONTINUE for those faults, the page'"'"'s own scrub included; per-run p50/p99/max, median (min-max) over runs. Background GB/s: its bytes over its seconds. Chunks are cut inside one hugepage (DESIGN.md 5), so 2 MiB pages take chunks up to 2M.\n" >md
	lat = dir "/latency.dat"
	for (p = 1; p <= npages; p++) {
		pg = pages[p]
		nrows = 0
		for (c = 1; c <= nchunks; c++) {
			ch = chunks[c]
			gib = ""
			for (k in M) {
				split(k, kk, SUBSEP)
				if (kk[1] == "chunk" && kk[3] == pg && kk[5] == ch && kk[6] == "busy_p50")
					gib = kk[4]
			}
			if (gib == "") continue
			if (!nrows++) {
				printf "\n%s GiB of %s pages:\n\n| chunk | busy faults per run | p50 us | p99 us | max us | background GB/s |\n|---|---|---|---|---|---|\n", gib, pg >md
				printf "%s# %s\n", nblk++ ? "\n\n" : "", pg >lat
			}
			bb = med("chunk", "hybrid", pg, gib, ch, "bg_bytes")
			bs = med("chunk", "hybrid", pg, gib, ch, "bg_seconds")
			bg = (bs != "" && bs > 0) ? bb / bs / 1e9 : ""
			printf "| %s | %s | %s | %s | %s | %s |\n", ch, f1(med("chunk", "hybrid", pg, gib, ch, "busy_faults")), rng("chunk", "hybrid", pg, gib, ch, "busy_p50"), rng("chunk", "hybrid", pg, gib, ch, "busy_p99"), rng("chunk", "hybrid", pg, gib, ch, "busy_max"), (bg == "") ? "-" : sprintf("%.1f", bg) >md
			printf "%s %s %s %s %s\n", med("chunk", "hybrid", pg, gib, ch, "chunk_bytes"), med("chunk", "hybrid", pg, gib, ch, "busy_p50"), med("chunk", "hybrid", pg, gib, ch, "busy_p99"), med("chunk", "hybrid", pg, gib, ch, "busy_max"), (bg == "") ? 0 : bg >lat
			C[++nc] = sprintf("{ \"chunk\": \"%s\", \"page\": \"%s\", \"gib\": %s, \"busy_faults\": %s, \"p50_us\": %s, \"p99_us\": %s, \"max_us\": %s, \"background_gbps\": %s }", ch, pg, gib, jnum(med("chunk", "hybrid", pg, gib, ch, "busy_faults")), jnum(med("chunk", "hybrid", pg, gib, ch, "busy_p50")), jnum(med("chunk", "hybrid", pg, gib, ch, "busy_p99")), jnum(med("chunk", "hybrid", pg, gib, ch, "busy_max")), jnum(bg))
		}
	}
	close(lat)
	if ("chunk" in HAS)
		printf "\n![fault latency against chunk size](latency.svg)\n" >md

	# Plot data: one file per page size that had launches, a column
	# per method.
	for (p = 1; p <= npages; p++) {
		if (!(("launch", pages[p]) in HAS)) continue
		f = dir "/launch-" pages[p] ".dat"
		printf "gib" >f
		for (i = 1; i <= nm; i++) printf " %s", meths[i] >f
		printf "\n" >f
		for (s = 1; s <= nsizes; s++) {
			printf "%s", sizes[s] >f
			for (i = 1; i <= nm; i++) {
				v = med("launch", meths[i], pages[p], sizes[s], "-", "ready_ms")
				printf " %s", v == "" ? "NaN" : v >f
			}
			printf "\n" >f
		}
		close(f)
	}

	# The JSON: machine, targets, fits, chunk rows and every median.
	js = dir "/suite.json"
	printf "{ \"version\": 1,\n  \"machine\": {" >js
	nk = split("date host cpu cpus numa_nodes mem_gib kernel os kvm qemu zvmm reps sizes pages chunks chunk_gib smoke cmdline", keys, " ")
	for (i = 1; i <= nk; i++) {
		v = MI[keys[i]]; gsub(/\\/, "\\\\", v); gsub(/"/, "\\\"", v)
		printf "%s \"%s\": \"%s\"", (i > 1) ? "," : "", keys[i], v >js
	}
	printf " },\n  \"skipped\": [" >js
	for (i = 1; i <= nsk; i++) {
		v = SK[i]; gsub(/\\/, "\\\\", v); gsub(/"/, "\\\"", v)
		printf "%s\n    \"%s\"", (i > 1) ? "," : "", v >js
	}
	printf "%s],\n  \"targets\": [\n", nsk ? "\n  " : "" >js
	for (i = 1; i <= nt; i++) printf "    %s%s\n", T[i], i < nt ? "," : "" >js
	printf "  ],\n  \"fits\": [\n" >js
	for (i = 1; i <= nf; i++) printf "    %s%s\n", F[i], i < nf ? "," : "" >js
	printf "  ],\n  \"chunks\": [\n" >js
	for (i = 1; i <= nc; i++) printf "    %s%s\n", C[i], i < nc ? "," : "" >js
	printf "  ],\n  \"medians\": [\n" >js
	for (i = 1; i <= nrow; i++) {
		split(row[i], rr, "\t")
		printf "    { \"section\": \"%s\", \"method\": \"%s\", \"page\": \"%s\", \"gib\": \"%s\", \"chunk\": \"%s\", \"metric\": \"%s\", \"n\": %d, \"median\": %s, \"min\": %s, \"max\": %s }%s\n", rr[1], rr[2], rr[3], rr[4], rr[5], rr[6], rr[7], rr[8], rr[9], rr[10], (i < nrow) ? "," : "" >js
	}
	printf "  ] }\n" >js
}
# The largest size measured with PAGE pages (the kernel may not have
# given all of SIZES), so targets are read where there are numbers.
function largest(pg,   s, b) {
	b = sizes[nsizes]
	for (s = 1; s <= nsizes; s++)
		if (med("launch", "qemu-prealloc", pg, sizes[s], "-", "ready_ms") != "")
			b = sizes[s]
	return b
}
function hum(b) {
	b += 0
	return b >= 1073741824 ? (b / 1073741824) "G" : b >= 1048576 ? (b / 1048576) "M" : (b / 1024) "K"
}
function brng(m, pb,   g) {
	g = B[m, pb, pb, 1]
	return g == "" ? "-" : sprintf("%.1f (%.1f-%.1f)", g, BL[m, pb, pb, 1], BH[m, pb, pb, 1])
}
' "$DIR/machine.tsv" "$DIR/summary.tsv" "$DIR/backends.json" "$DIR/backends.txt"

# 3. Plots.
for dat in "$DIR"/launch-*.dat; do
	[ -f "$dat" ] || continue
	pg=${dat##*/launch-}
	pg=${pg%.dat}
	gnuplot <<EOF
set terminal svg size 800,500 dynamic
set output "${dat%.dat}.svg"
set title "Launch to ready against memory size, $pg pages"
set xlabel "guest memory (GiB)"
set ylabel "exec to ready (ms, log scale)"
set key top left
set grid
set logscale x 2
set logscale y
set xtics (1, 2, 4, 8, 16, 32, 64)
set xrange [0.8:20]
plot for [i=2:8] "$dat" using 1:i with linespoints title columnhead(i)
EOF
done
# latency.dat: one block per page size (index 0, 1, ...), "# PAGE" first.
if grep -q '^# ' "$DIR/latency.dat" 2>/dev/null; then
	plot=""
	i=0
	for pg in $(grep '^# ' "$DIR/latency.dat" | cut -c3-); do
		plot+="${plot:+, }'$DIR/latency.dat' index $i using 1:2 with linespoints title '$pg pages p50', '' index $i using 1:3 with linespoints title '$pg p99', '' index $i using 1:5 axes x1y2 with linespoints dashtype 2 title '$pg background GB/s'"
		i=$((i + 1))
	done
	gnuplot <<EOF
set terminal svg size 800,500 dynamic
set output "$DIR/latency.svg"
set title "Demand-fault latency and background throughput against chunk size"
set xlabel "chunk (bytes)"
set ylabel "fault latency (us)"
set y2label "background GB/s"
set logscale x 2
set xtics ("64K" 65536, "256K" 262144, "1M" 1048576, "2M" 2097152, "8M" 8388608, "64M" 67108864, "1G" 1073741824)
set logscale y
set ytics nomirror
set y2tics
set key top left
set grid
plot $plot
EOF
fi
rm -f "$DIR"/*.dat
# The new-user row (bench/newuser.sh, the suite's last section).
if [ -s "$DIR/newuser.md" ]; then
	{
		printf '\n## New users: ten launches in a row without a profile\n\n'
		printf 'Each launch starts with an empty calibration cache (backend = auto\n'
		printf 'measures) and scrubs a freshly poisoned pool with `zvmm prezero --pool`;\n'
		printf 'the best backend is every backend named in the policy, the same pool,\n'
		printf 'in the same run (bench/newuser.sh, DESIGN.md 6).\n\n'
		cat "$DIR/newuser.md"
	} >>"$DIR/report.md"
fi
# QEMU through zvmm exec against its own preallocation (bench/exec.sh).
if [ -s "$DIR/exec.md" ]; then
	{
		printf '\n## QEMU on zvmm'"'"'s memory: zvmm exec\n\n'
		printf 'Unmodified QEMU on 8 GiB, the same page size and guest, four ways in\n'
		printf 'the same run: through `zvmm exec` on a pool whose state record the\n'
		printf 'previous launch wrote, and on a zvmmd lease of one chunk; alone with\n'
		printf 'prealloc=on; alone with neither (the kernel zeroes at first touch).\n'
		printf 'Ready is exec to the guest'"'"'s first serial line, touch to its report\n'
		printf '(bench/exec.sh, zvmm(1) exec).\n\n```\n'
		cat "$DIR/exec.md"
		printf '```\n'
	} >>"$DIR/report.md"
fi
# The launch storm (bench/storm.sh): zvmmd against warm pools and QEMU.
if [ -s "$DIR/storm.md" ]; then
	{
		printf '\n## Launch storm: zvmmd, warm pools, QEMU\n\n'
		printf 'One launch after another of 1 GiB guests on 1 GiB pages (2 MiB\n'
		printf 'pages where the kernel has no 1 GiB pool: its first line says), each\n'
		printf 'touching all its memory, three ways in the same run; then a running\n'
		printf 'guest'"'"'s touch rate while zvmmd fills chunks at idle priority, and what\n'
		printf 'filling takes from a busy vCPU'"'"'s memory bandwidth (a writer on one core\n'
		printf 'standing in for it: a PVM guest cannot load memory itself)\n'
		printf '(bench/storm.sh, DESIGN.md 3 "zvmmd").\n\n```\n'
		cat "$DIR/storm.md"
		printf '```\n'
	} >>"$DIR/report.md"
fi
