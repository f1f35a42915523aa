# The Rust bindings (bindings/rust/README.md), for the top-level Makefile
# to include. Both targets use Debian's toolchain by path, offline, and
# skip saying so when it is missing (ZVMM_RUST_REQUIRE=1: fail instead).
#
#   make rust-sys        regenerate bindings/rust/src/sys.rs from the header
#   make rust-sys-check  fail when src/sys.rs is not what the header gives
#   make rust-test       build the crate and run its tests against an
#                        installed libzvmm: PKG_CONFIG_SYSROOT_DIR and
#                        PKG_CONFIG_PATH name a DESTDIR install
#                        (make install DESTDIR=/tmp/x PREFIX=/usr), or
#                        ZVMM_LIB_DIR a directory holding libzvmm.so

RUST_DIR := bindings/rust
# Under the build tree, as the C objects: make clean removes it.
RUST_O ?= $(abspath $(O))/rust

rust-sys:
	$(Q)$(RUST_DIR)/sys-gen.sh

rust-sys-check:
	$(Q)$(RUST_DIR)/sys-gen.sh --check

rust-test:
	$(Q)ZVMM_RUST_BUILD=$(RUST_O) ZVMMD_BIN=$(abspath $(ZVMMD)) \
		$(RUST_DIR)/run-tests.sh

.PHONY: rust-sys rust-sys-check rust-test
