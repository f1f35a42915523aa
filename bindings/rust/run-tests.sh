#!/usr/bin/env bash
# Builds the Rust bindings and runs their tests offline, with Debian's
# toolchain and Debian's crate registry, as Debian builds Rust, against
# an installed libzvmm found through pkg-config:
#
#   make install DESTDIR=/tmp/x PREFIX=/usr
#   PKG_CONFIG_SYSROOT_DIR=/tmp/x PKG_CONFIG_PATH=/tmp/x/usr/lib/pkgconfig \
#       bindings/rust/run-tests.sh
#
# Everything it writes goes under ZVMM_RUST_BUILD (default build/rust):
# a CARGO_HOME of its own (no ~/.cargo is read or written), the target
# dir, and a copy of the crate, so that Cargo.lock (not committed: it
# follows whatever /usr/share/cargo/registry holds, as in Debian's own
# builds) is written there and not into the source tree.
#
# Tests that need what this machine lacks (free hugepages, a hugetlbfs
# mount, a userfaultfd) print "skipped: TEST: WHY"; this script lists
# them at the end. ZVMM_RUST_REQUIRE=1 makes each of those a failure,
# and a missing toolchain too.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${ZVMM_RUST_BUILD:-$top/build/rust}
# Debian's toolchain by path: a rustup one earlier in PATH is not what
# CI or a Debian build has (rustc 1.63, cargo 0.66 on Debian 12).
CARGO=${CARGO:-/usr/bin/cargo}
RUSTC=${RUSTC:-/usr/bin/rustc}
REGISTRY=${ZVMM_RUST_REGISTRY:-/usr/share/cargo/registry}
export RUSTC PATH=/usr/bin:$PATH
# The zvmmd the lease test starts (tests/service.rs): the build's.
export ZVMMD_BIN=${ZVMMD_BIN:-$top/build/zvmmd}

skip_all() {
	if [ "${ZVMM_RUST_REQUIRE:-0}" = 1 ]; then
		echo "rust-test: $1; ZVMM_RUST_REQUIRE=1 makes it an error" >&2
		exit 1
	fi
	echo "rust-test: skipped: $1"
	exit 0
}
[ -x "$CARGO" ] && [ -x "$RUSTC" ] ||
	skip_all "no $CARGO or $RUSTC (apt-get install cargo rustc)"
for crate in libc vm-memory; do
	ls -d "$REGISTRY/$crate"-[0-9]* >/dev/null 2>&1 ||
		skip_all "no $crate crate in $REGISTRY (apt-get install librust-libc-dev librust-vm-memory-dev)"
done

# The library the crate links and the tests load: the build script asks
# pkg-config the same question.
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
if [ -z "${ZVMM_LIB_DIR:-}" ]; then
	if ! flags=$("$PKG_CONFIG" --libs-only-L zvmm); then
		echo "rust-test: pkg-config finds no zvmm: install it (make install DESTDIR=/tmp/x PREFIX=/usr) and set PKG_CONFIG_SYSROOT_DIR=/tmp/x PKG_CONFIG_PATH=/tmp/x/usr/lib/pkgconfig" >&2
		exit 1
	fi
	libdir=$(for f in $flags; do case $f in -L*) printf '%s:' "${f#-L}" ;; esac; done)
else
	libdir=$ZVMM_LIB_DIR:
fi
export LD_LIBRARY_PATH=${libdir}${LD_LIBRARY_PATH:-}

mkdir -p "$build/cargo-home" "$build/crate"
cat >"$build/cargo-home/config.toml" <<EOT
# Written by bindings/rust/run-tests.sh: Debian's crates, offline.
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "$REGISTRY"

[net]
offline = true
EOT
export CARGO_HOME=$build/cargo-home
export CARGO_TARGET_DIR=$build/target

# The crate's sources, copied with their times (cargo rebuilds by
# mtime), and whatever was removed from the tree removed here too.
rm -rf "$build/crate.new"
mkdir "$build/crate.new"
(cd "$here" && cp -p --parents Cargo.toml build.rs README.md \
	$(find src tests examples -name '*.rs') "$build/crate.new/")
[ -f "$build/crate/Cargo.lock" ] && cp -p "$build/crate/Cargo.lock" "$build/crate.new/"
rm -rf "$build/crate"
mv "$build/crate.new" "$build/crate"

log=$build/test.log
cd "$build/crate"
echo "rust-test: $("$CARGO" --version), $("$RUSTC" --version); libzvmm from ${libdir%:}"
"$CARGO" build --offline --all-targets
"$CARGO" build --offline --no-default-features --lib
set +e
# --nocapture: a passing test's skip line and timings stay visible.
"$CARGO" test --offline -- --nocapture 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
skips=$(grep -c '^skipped: ' "$log" || true)
if [ "$skips" != 0 ]; then
	echo "rust-test: $skips test(s) skipped:"
	grep '^skipped: ' "$log" | sed 's/^/  /'
fi
if [ "$rc" != 0 ]; then
	echo "rust-test: cargo test failed ($rc); the output is in $log" >&2
	exit "$rc"
fi
if [ "$skips" = 0 ]; then
	echo "rust-test: passed"
else
	echo "rust-test: passed, $skips skipped (ZVMM_RUST_REQUIRE=1 makes a skip fail)"
fi
