#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What `make test` says after Criterion's closing line.

    report.py REPORT.tap FINI_LOG

REPORT.tap is the runner's --tap report (its JSON report does not
escape quotes in messages). Every skip says what the test
needs ("needs WHAT: why", tests/helpers.h); this prints one line with the
skips by need, then one line per need with its reason and suites. It
fails (exit 1) when a test skipped without saying what it needs, when a
skip is for a need $ZVMM_TEST_REQUIRE lists (its keys are the comments
of helpers.h's TEST_NEED_* lines), or when a .fini check failed
(test_fini_expect() wrote FINI_LOG).
"""
import os
import re
import sys

FILTERED = "test was skipped"


def need_keys():
    """need text -> $ZVMM_TEST_REQUIRE key, from helpers.h."""
    keys = {}
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "helpers.h")) as f:
        for line in f:
            m = re.match(
                r'#define TEST_NEED_\w+ "([^"]+)"\s*/\* key: (\w+) \*/', line)
            if m:
                keys[m.group(1)] = m.group(2)
    return keys


def verb(n):
    return "needs" if n == 1 else "need"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: report.py REPORT.tap FINI_LOG")
    keys = need_keys()
    required = {k for k in re.split(r"[,\s]+",
                                    os.environ.get("ZVMM_TEST_REQUIRE", ""))
                if k}
    needs = {}  # need -> [(suite, test, why)]
    unsaid, filtered, total = [], 0, 0
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            m = re.match(r"(?:not )?ok - (\w+)::(\w+)(.*)", line)
            if not m:
                continue
            total += 1
            suite, test, rest = m.groups()
            s = re.match(r"\s*# SKIP (.*)", rest)
            if not s:
                continue
            msg = s.group(1).strip()
            if msg == FILTERED:
                filtered += 1
                continue
            m = re.match(r"needs (.+?): (.*)", msg)
            if not m or m.group(1) not in keys:
                unsaid.append("%s::%s: %s" % (suite, test, msg))
                continue
            needs.setdefault(m.group(1), []).append((suite, test, m.group(2)))

    skipped = sum(len(v) for v in needs.values()) + len(unsaid)
    order = sorted(needs, key=lambda n: (-len(needs[n]), n))
    parts = ["%d %s %s" % (len(needs[n]), verb(len(needs[n])), n)
             for n in order]
    if unsaid:
        parts.append("%d %s not what %s" % (
            len(unsaid), "says" if len(unsaid) == 1 else "say",
            "it needs" if len(unsaid) == 1 else "they need"))
    ran = total - filtered
    print("%d skipped%s%s (of %d tests%s)" % (
        skipped, ": " if parts else "", ", ".join(parts), ran,
        ", %d not selected" % filtered if filtered else ""))
    for n in order:
        whys = sorted({w for _, _, w in needs[n]})
        suites = {}
        for s, _, _ in needs[n]:
            suites[s] = suites.get(s, 0) + 1
        where = ", ".join("%s %d" % kv for kv in sorted(suites.items()))
        why = whys[0] if len(whys) == 1 else "%s; and %d other reasons" % (
            whys[0], len(whys) - 1)
        print("  %d %s %s (%s): %s" % (len(needs[n]), verb(len(needs[n])),
                                       n, keys.get(n, "?"), why))
        print("    in %s" % where)

    bad = False
    for u in unsaid:
        print("report: skipped without saying what it needs: %s" % u,
              file=sys.stderr)
        bad = True
    for n in order:
        if keys.get(n) in required:
            for s, t, w in needs[n]:
                print("report: %s::%s skipped for %s, which "
                      "ZVMM_TEST_REQUIRE=%s requires: %s" % (
                          s, t, n, os.environ["ZVMM_TEST_REQUIRE"], w),
                      file=sys.stderr)
            bad = True
    try:
        with open(sys.argv[2]) as f:
            fini = [line.rstrip("\n") for line in f if line.strip()]
    except FileNotFoundError:
        fini = []
    for line in fini:
        print("report: a .fini check failed: %s" % line, file=sys.stderr)
        bad = True
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
