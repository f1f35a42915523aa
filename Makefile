# zvmm: `make` builds build/zvmm, `make test` runs every test, `make bench`
# runs the benchmark suite against QEMU and the kernel, `make deps` installs what the build needs,
# `make fuzz-smoke` runs the parsers' fuzzers briefly (fuzz/README.md).
# V=1 shows full command lines; SANITIZE=address,undefined or
# SANITIZE=thread builds (and tests) with sanitizers under their own tree.

comma := ,
ifneq ($(SANITIZE),)
O ?= build/sanitize-$(subst $(comma),-,$(SANITIZE))
else
O ?= build
endif

CC ?= gcc
CROSS_CC ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64
PKG_CONFIG ?= pkg-config

HOST_ARCH := $(shell uname -m)
ifeq ($(HOST_ARCH),x86_64)
ARCH_DIR := arch/x86
else ifeq ($(HOST_ARCH),aarch64)
ARCH_DIR := arch/arm64
else
$(error zvmm builds on x86_64 and aarch64 hosts, not $(HOST_ARCH))
endif

DEB_PACKAGES := gcc make pkg-config libnuma-dev liburing-dev \
	libcriterion-dev libinih-dev libjson-c-dev gcc-aarch64-linux-gnu \
	libc6-dev-arm64-cross qemu-user qemu-system-x86 gnuplot-nox \
	python3-jsonschema g++ abigail-tools libseccomp-dev strace
# clang and its libFuzzer/sanitizer runtimes, for fuzz/.
FUZZ_PACKAGES := clang libclang-rt-14-dev
DEB_PACKAGES += $(FUZZ_PACKAGES)
# The Rust bindings (bindings/rust), built offline from Debian's crates;
# bindgen loads the libclang that clang brings.
RUST_PACKAGES := cargo rustc bindgen rustfmt librust-libc-dev \
	librust-vm-memory-dev
DEB_PACKAGES += $(RUST_PACKAGES)

WARNINGS := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes \
	-Wformat=2 -Wshadow -Wno-format-nonliteral

CFLAGS ?= -O2 -g
# -fPIC: the same objects make the binary and libzvmm.so; hidden
# visibility: the library exports only what include/zvmm/zvmm.h marks.
override CFLAGS += -std=gnu11 $(WARNINGS) -D_GNU_SOURCE -MMD -MP -fPIC \
	-fvisibility=hidden
LIBS_PC := numa liburing inih json-c
LIBZ_PC := numa inih json-c
PC_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(LIBS_PC) 2>/dev/null)
PC_LIBS = $(shell $(PKG_CONFIG) --libs $(LIBS_PC) 2>/dev/null)
CRIT_CFLAGS = $(shell $(PKG_CONFIG) --cflags criterion 2>/dev/null)
CRIT_LIBS = $(shell $(PKG_CONFIG) --libs criterion 2>/dev/null)
# The tests' seccomp filters (libzvmm(3) SECCOMP); not the library's.
SECCOMP_CFLAGS = $(shell $(PKG_CONFIG) --cflags libseccomp 2>/dev/null)
SECCOMP_LIBS = $(shell $(PKG_CONFIG) --libs libseccomp 2>/dev/null)
override CFLAGS += $(PC_CFLAGS)
LDLIBS := $(PC_LIBS) -lpthread

ifneq ($(SANITIZE),)
override CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
override LDFLAGS += -fsanitize=$(SANITIZE)
# TSan does not model fences; the backends' fence contract is tested in
# the plain and ASan builds.
ifneq ($(findstring thread,$(SANITIZE)),)
override CFLAGS += -Wno-tsan
STRESS_SEEDS ?= 40
endif
endif

ifeq ($(V),1)
Q :=
quiet = @:
else
Q := @
quiet = @printf '  %-8s %s\n'
endif

LIB_SRCS := $(wildcard lib/*.c)
ARCH_SRCS := $(wildcard $(ARCH_DIR)/*.c $(ARCH_DIR)/*.S) arch/generic/clear.c
ZERO_SRCS := $(wildcard zeroing/*.c)
API_SRCS := $(wildcard api/*.c)
# zvmmd: every file of service/ is the daemon's; its wire format, STATUS
# schema and client are in lib/, where libzvmm and zvmm reach them too.
ZVMMD_SRCS := $(wildcard service/*.c)
BENCH_SRCS := $(wildcard bench/*.c)
LIBZ_SRCS := $(LIB_SRCS) $(ARCH_SRCS) $(ZERO_SRCS) $(API_SRCS)
CORE_SRCS := $(LIBZ_SRCS) $(BENCH_SRCS)
MAIN_SRCS := $(wildcard vmm/*.c) vmm/guest_image.S
TEST_SRCS := $(wildcard tests/test_*.c) tests/helpers.c service/config.c
STRESS := $(O)/tests/stress-pool
MODEL := $(O)/tests/model-life
HOSTILE_ELF := $(O)/guest/hostile.elf
STRESS_SEEDS ?= 200
MODEL_SEEDS ?= 8 40

obj = $(patsubst %,$(O)/%.o,$(basename $(1)))
CORE_OBJS := $(call obj,$(CORE_SRCS))
LIBZ_OBJS := $(call obj,$(LIBZ_SRCS))
MAIN_OBJS := $(call obj,$(MAIN_SRCS))
TEST_OBJS := $(call obj,$(TEST_SRCS))

# The arm64 backends, cross-built and run under qemu-aarch64 (static, so
# no arm64 libraries are needed on the host).
ARM64_SRCS := arch/arm64/clear.c arch/arm64/cpu.c arch/generic/clear.c \
	zeroing/backend.c lib/log.c lib/size.c tests/arm64/test_arm64.c
ARM64_TEST := $(O)/tests/arm64/test-arm64

.DELETE_ON_ERROR:
.PHONY: all lib install uninstall example test test-arm64 test-unit \
	bench bench-smoke bench-backends \
	bench-launch bench-demand bench-storm bench-exec bench-record-soak deps clean \
	schema header-cxx \
	abi-check \
	static-check \
	format fuzz fuzz-seeds fuzz-smoke fuzz-run FORCE

ZVMMD := $(O)/zvmmd

all: $(O)/zvmm $(ZVMMD) $(HOSTILE_ELF) lib

# libzvmm: the engine behind include/zvmm/zvmm.h, shared (soname
# libzvmm.so.$(ZVMM_SOVERSION), only the zvmm_* API exported: the version
# script) and static (one relocatable object whose hidden symbols are
# made local, so an embedding VMM sees only zvmm_* there too).
ZVMM_VERSION := $(shell sed -n 's/^\#define ZVMM_VERSION "\(.*\)"/\1/p' include/zvmm/zvmm.h)
ZVMM_SOVERSION := $(shell sed -n 's/^\#define ZVMM_VERSION_MAJOR //p' include/zvmm/zvmm.h)
LIBZ_SO := $(O)/libzvmm/libzvmm.so.$(ZVMM_VERSION)
LIBZ_SONAME := libzvmm.so.$(ZVMM_SOVERSION)
LIBZ_A := $(O)/libzvmm/libzvmm.a
LIBZ_LIBS = $(shell $(PKG_CONFIG) --libs $(LIBZ_PC) 2>/dev/null) -lpthread
# zvmm.pc names these for a static link as libraries, not as Requires:
# the public header includes none of their headers, so --cflags zvmm is
# zvmm's include directory alone.
LIBZ_LIBS_PRIVATE = $(shell $(PKG_CONFIG) --libs --static $(LIBZ_PC) 2>/dev/null) -lpthread

lib: $(LIBZ_SO) $(LIBZ_A) $(O)/libzvmm/zvmm.pc

$(LIBZ_SO): $(LIBZ_OBJS) api/libzvmm.map
	@mkdir -p $(dir $@)
	$(quiet) LD $@
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,$(LIBZ_SONAME) \
		-Wl,--version-script=api/libzvmm.map -Wl,--no-undefined \
		-o $@ $(LIBZ_OBJS) $(LIBZ_LIBS)
	$(Q)ln -sf $(notdir $@) $(O)/libzvmm/$(LIBZ_SONAME)
	$(Q)ln -sf $(LIBZ_SONAME) $(O)/libzvmm/libzvmm.so

# The archive's api/zvmm.c has no symbol versions (ZVMM_NO_SYMVER): a
# shared object that links it would lack their nodes.
LIBZ_A_OBJS = $(filter-out $(O)/api/zvmm.o,$(LIBZ_OBJS)) $(O)/api/zvmm-static.o

$(O)/api/zvmm-static.o: api/zvmm.c $(O)/.cflags
	@mkdir -p $(dir $@)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -DZVMM_NO_SYMVER -c -o $@ $<

$(LIBZ_A): $(LIBZ_A_OBJS)
	@mkdir -p $(dir $@)
	$(quiet) AR $@
	$(Q)$(LD) -r -o $(O)/libzvmm/libzvmm.o $(LIBZ_A_OBJS)
	$(Q)objcopy --localize-hidden $(O)/libzvmm/libzvmm.o
	$(Q)rm -f $@ && ar rcs $@ $(O)/libzvmm/libzvmm.o

# Installation (make install DESTDIR=... PREFIX=/usr): GNU directory
# variables, Debian's multiarch LIBDIR from debian/rules.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
# /etc for a system install (PREFIX=/usr), else under the prefix.
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(if $(filter /usr,$(PREFIX)),/lib,$(PREFIX)/lib)/systemd/system
DOCDIR ?= $(DATADIR)/doc/zvmm
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

# Regenerated when the installation directories change.
$(O)/.installdirs: FORCE
	@mkdir -p $(O)
	@echo '$(PREFIX) $(LIBDIR) $(INCLUDEDIR)' | cmp -s - $@ || \
		echo '$(PREFIX) $(LIBDIR) $(INCLUDEDIR)' >$@

$(O)/libzvmm/zvmm.pc: api/zvmm.pc.in include/zvmm/zvmm.h $(O)/.installdirs
	@mkdir -p $(dir $@)
	$(quiet) GEN $@
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(ZVMM_VERSION)|' \
		-e 's|@LIBS_PRIVATE@|$(LIBZ_LIBS_PRIVATE)|' $< >$@

MANPAGES := man/zvmm.1 man/zvmm.conf.5 man/libzvmm.3
# One manual page name per API function (`man 3 zvmm_guest_open`): each a
# .so link to libzvmm(3), where the functions are described together.
lparen := (
API_FUNCS := $(shell sed -n 's/^ZVMM_API [^$(lparen)]*[ *]\(zvmm_[a-z_0-9]*\)$(lparen).*/\1/p' include/zvmm/zvmm.h)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
		$(DESTDIR)$(INCLUDEDIR)/zvmm $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(DATADIR)/zvmm/udev $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5
	install -m 0755 $(O)/zvmm $(DESTDIR)$(BINDIR)/zvmm
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(SYSCONFDIR)/zvmm \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(ZVMMD) $(DESTDIR)$(SBINDIR)/zvmmd
	install -m 0644 dist/zvmmd.conf $(DESTDIR)$(SYSCONFDIR)/zvmm/zvmmd.conf
	install -m 0644 dist/systemd/zvmmd.service dist/systemd/zvmmd.socket \
		$(DESTDIR)$(SYSTEMDUNITDIR)/
	install -m 0644 docs/zvmmd-protocol.md docs/zvmmd-status.schema.json \
		$(DESTDIR)$(DOCDIR)/
	install -m 0644 man/zvmmd.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 man/zvmmd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(LIBZ_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBZ_SO)) $(DESTDIR)$(LIBDIR)/$(LIBZ_SONAME)
	ln -sf $(LIBZ_SONAME) $(DESTDIR)$(LIBDIR)/libzvmm.so
	install -m 0644 $(LIBZ_A) $(DESTDIR)$(LIBDIR)/
	install -m 0644 include/zvmm/zvmm.h include/zvmm/syscalls.list \
		$(DESTDIR)$(INCLUDEDIR)/zvmm/
	install -m 0644 $(O)/libzvmm/zvmm.pc $(DESTDIR)$(PKGCONFIGDIR)/
	install -m 0644 configs/*.conf $(DESTDIR)$(DATADIR)/zvmm/
	install -m 0644 docs/stats.schema.json $(DESTDIR)$(DATADIR)/zvmm/
	install -m 0644 $(GUEST_ELF) $(DESTDIR)$(DATADIR)/zvmm/touch.elf
	install -m 0644 dist/udev/70-zvmm-userfaultfd.rules \
		$(DESTDIR)$(DATADIR)/zvmm/udev/
	install -m 0644 man/zvmm.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 man/libzvmm.3 $(DESTDIR)$(MANDIR)/man3/
	for f in $(API_FUNCS); do \
		echo '.so man3/libzvmm.3' >$(DESTDIR)$(MANDIR)/man3/$$f.3; \
	done
	install -m 0644 man/zvmm.conf.5 $(DESTDIR)$(MANDIR)/man5/

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/zvmmd $(DESTDIR)$(SYSCONFDIR)/zvmm/zvmmd.conf \
		$(DESTDIR)$(SYSTEMDUNITDIR)/zvmmd.service \
		$(DESTDIR)$(SYSTEMDUNITDIR)/zvmmd.socket \
		$(DESTDIR)$(DOCDIR)/zvmmd-protocol.md \
		$(DESTDIR)$(DOCDIR)/zvmmd-status.schema.json \
		$(DESTDIR)$(MANDIR)/man8/zvmmd.8 $(DESTDIR)$(MANDIR)/man5/zvmmd.conf.5
	-rmdir $(DESTDIR)$(SYSCONFDIR)/zvmm $(DESTDIR)$(DOCDIR) 2>/dev/null
	rm -f $(DESTDIR)$(BINDIR)/zvmm \
		$(DESTDIR)$(LIBDIR)/$(notdir $(LIBZ_SO)) \
		$(DESTDIR)$(LIBDIR)/$(LIBZ_SONAME) \
		$(DESTDIR)$(LIBDIR)/libzvmm.so $(DESTDIR)$(LIBDIR)/libzvmm.a \
		$(DESTDIR)$(INCLUDEDIR)/zvmm/zvmm.h \
		$(DESTDIR)$(INCLUDEDIR)/zvmm/syscalls.list \
		$(DESTDIR)$(PKGCONFIGDIR)/zvmm.pc \
		$(DESTDIR)$(MANDIR)/man1/zvmm.1 $(DESTDIR)$(MANDIR)/man3/libzvmm.3 \
		$(DESTDIR)$(MANDIR)/man5/zvmm.conf.5 \
		$(addprefix $(DESTDIR)$(MANDIR)/man3/,$(addsuffix .3,$(API_FUNCS)))
	rm -f $(addprefix $(DESTDIR)$(DATADIR)/zvmm/,$(notdir $(wildcard configs/*.conf)))
	rm -f $(DESTDIR)$(DATADIR)/zvmm/udev/70-zvmm-userfaultfd.rules \
		$(DESTDIR)$(DATADIR)/zvmm/stats.schema.json \
		$(DESTDIR)$(DATADIR)/zvmm/touch.elf
	-rmdir $(DESTDIR)$(INCLUDEDIR)/zvmm $(DESTDIR)$(DATADIR)/zvmm/udev \
		$(DESTDIR)$(DATADIR)/zvmm 2>/dev/null

# The embedding examples, built against an installed libzvmm through
# pkg-config (PKG_CONFIG_PATH and a sysroot for a DESTDIR install):
# embed.c, and on x86-64 minivmm.c, a VMM of its own on the public API.
example: examples/embed.c examples/minivmm.c
	$(MAKE) -C examples $(if $(filter x86_64,$(HOST_ARCH)),all,embed)

include bindings/rust/rust.mk

$(O)/zvmm: $(CORE_OBJS) $(MAIN_OBJS)
	$(quiet) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# zvmmd: the host service that keeps hugepage memory zeroed ahead of time,
# on lib/ alone: none of the engine is in it.
$(ZVMMD): $(call obj,$(ZVMMD_SRCS)) $(call obj,$(LIB_SRCS))
	$(quiet) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Objects are rebuilt when the compiler or its flags change.
$(O)/.cflags: FORCE
	@mkdir -p $(O)
	@echo '$(CC) $(CPPFLAGS) $(CFLAGS)' | cmp -s - $@ || echo '$(CC) $(CPPFLAGS) $(CFLAGS)' >$@

$(O)/%.o: %.c $(O)/.cflags
	@mkdir -p $(dir $@)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(O)/%.o: %.S $(O)/.cflags
	@mkdir -p $(dir $@)
	$(quiet) AS $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(O)/tests/%.o: override CFLAGS += $(CRIT_CFLAGS) $(SECCOMP_CFLAGS)

# The guest: freestanding, its own flags (never sanitized), linked at
# 1 MiB by guest/touch.ld, then built into zvmm with .incbin.
GUEST_CFLAGS := -O2 -g -std=gnu11 -ffreestanding -fno-pic -fno-pie \
	-fno-stack-protector -mno-red-zone -mgeneral-regs-only \
	-fno-asynchronous-unwind-tables -m64 $(WARNINGS) -MMD -MP
GUEST_ELF := $(O)/guest/touch.elf
GUEST_OBJS := $(O)/guest/entry.o $(O)/guest/touch.o

$(O)/guest/%.o: guest/%.c
	@mkdir -p $(dir $@)
	$(quiet) GUESTCC $@
	$(Q)$(CC) $(GUEST_CFLAGS) -c -o $@ $<

$(O)/guest/%.o: guest/%.S
	@mkdir -p $(dir $@)
	$(quiet) GUESTAS $@
	$(Q)$(CC) $(GUEST_CFLAGS) -c -o $@ $<

$(GUEST_ELF): $(GUEST_OBJS) guest/touch.ld
	$(quiet) GUESTLD $@
	$(Q)$(LD) -m elf_x86_64 -nostdlib -static -T guest/touch.ld -o $@ $(GUEST_OBJS)

# The hostile guest of the guest-boundary tests (tests/test_hostile.c).
$(HOSTILE_ELF): $(O)/guest/entry.o $(O)/guest/hostile.o guest/touch.ld
	$(quiet) GUESTLD $@
	$(Q)$(LD) -m elf_x86_64 -nostdlib -static -T guest/touch.ld -o $@ \
		$(O)/guest/entry.o $(O)/guest/hostile.o

$(O)/vmm/guest_image.o: vmm/guest_image.S $(GUEST_ELF)
	@mkdir -p $(dir $@)
	$(quiet) AS $@
	$(Q)$(CC) -c -DGUEST_IMAGE='"$(GUEST_ELF)"' -o $@ $<

# docs/stats.schema.json comes from api/stats.h's table; `make schema`
# writes it again, tests/test_schema.c fails while it differs.
$(O)/tools/stats-schema: tools/stats-schema.c $(O)/api/stats.o
	@mkdir -p $(dir $@)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(shell pkg-config --libs json-c)

# docs/zvmmd-status.schema.json likewise, from lib/zvmmd_status.h's rows.
$(O)/tools/zvmmd-status-schema: tools/zvmmd-status-schema.c \
		$(O)/lib/zvmmd_status.o $(O)/lib/size.o
	@mkdir -p $(dir $@)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(shell pkg-config --libs json-c)

schema: $(O)/tools/stats-schema $(O)/tools/zvmmd-status-schema
	$(Q)$(O)/tools/stats-schema >docs/stats.schema.json
	$(Q)$(O)/tools/zvmmd-status-schema >docs/zvmmd-status.schema.json

# The device model is unit-tested without KVM (tests/test_devices.c).
$(O)/tests/zvmm-tests: $(TEST_OBJS) $(CORE_OBJS) $(O)/vmm/devices.o \
		$(O)/vmm/kvm.o
	$(quiet) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CRIT_LIBS) $(SECCOMP_LIBS) $(LDLIBS)

$(STRESS): $(O)/tests/stress_pool.o $(CORE_OBJS)
	$(quiet) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(MODEL): $(O)/tests/model_life.o $(CORE_OBJS)
	$(quiet) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(ARM64_TEST): $(ARM64_SRCS) $(wildcard arch/*.h arch/*/*.h zeroing/*.h lib/*.h)
	@mkdir -p $(dir $@)
	@command -v $(CROSS_CC) >/dev/null || { echo "$(CROSS_CC) not found: run 'make deps'" >&2; exit 1; }
	$(quiet) CROSS $@
	$(Q)$(CROSS_CC) -O2 -g -std=gnu11 $(WARNINGS) -D_GNU_SOURCE -static \
		-o $@ $(ARM64_SRCS) -lpthread

# The arm64 tests run on three CPU models with DC ZVA blocks of 64
# (cortex-a72), 256 (a64fx) and 512 bytes (max), so the head and tail
# store paths of dc_zva are taken too.
test-arm64: $(ARM64_TEST)
ifeq ($(HOST_ARCH),aarch64)
	$(Q)$(ARM64_TEST)
else
	@command -v $(QEMU_AARCH64) >/dev/null || { echo "$(QEMU_AARCH64) not found: run 'make deps'" >&2; exit 1; }
	$(Q)$(QEMU_AARCH64) -cpu cortex-a72 $(ARM64_TEST)
	$(Q)$(QEMU_AARCH64) -cpu a64fx $(ARM64_TEST)
	$(Q)$(QEMU_AARCH64) -cpu max $(ARM64_TEST)
endif

# Criterion runs each test in its own process; -j1 because the hugepage
# tests change the kernel's pool counts and must not overlap. The tests
# keep backend=auto's profile under $(O)/test-cache and pool records under
# $(O)/test-state, never in the machine's /var/cache/zvmm or
# /var/lib/zvmm. After the runner's closing line, tests/report.py says
# what was skipped and why (one line per need) and fails the run for a
# failed .fini check or a skip ZVMM_TEST_REQUIRE forbids (e.g.
# ZVMM_TEST_REQUIRE=kvm,1g: tests/helpers.h lists the keys); then
# tests/host-state.sh fails it for anything the tests left on the host.
#
# Criterion's sandbox (BoxFort) maps its arena with MAP_FIXED at random
# addresses that ThreadSanitizer reserves for its shadow, so a TSan-built
# runner cannot start ("Could not initialize inheritable arena"). Under
# SANITIZE=thread the runner is the plain build and every test that runs
# zvmm runs the TSan build, which fails on any report (exit 66).
ifneq ($(findstring thread,$(SANITIZE)),)
TEST_RUNNER := build/tests/zvmm-tests
TEST_LIB := build/libzvmm/libzvmm.so.$(ZVMM_VERSION)
$(TEST_RUNNER): FORCE
	$(Q)$(MAKE) --no-print-directory O=build SANITIZE= $@ $(TEST_LIB)
else
TEST_RUNNER := $(O)/tests/zvmm-tests
TEST_LIB := $(LIBZ_SO)
endif

# Tenants of libzvmm under a seccomp filter of its SECCOMP list
# (tests/test_seccomp.c): always a plain build, linked with libzvmm.a,
# since a sanitizer's runtime makes system calls of its own.
# zvmmd runs under its unit's filter the same way: the plain one.
ifneq ($(SANITIZE),)
SECCOMP_TENANT := build/tests/seccomp-tenant
SECCOMP_ZVMMD := build/zvmmd
$(SECCOMP_TENANT) $(SECCOMP_ZVMMD): FORCE
	$(Q)$(MAKE) --no-print-directory O=build SANITIZE= $@
else
SECCOMP_TENANT := $(O)/tests/seccomp-tenant
SECCOMP_ZVMMD := $(ZVMMD)
$(SECCOMP_TENANT): $(O)/tests/seccomp_tenant.o $(LIBZ_A)
	$(quiet) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(SECCOMP_LIBS) $(LIBZ_LIBS)
endif

# The public header compiles as C++ (-pedantic), and the library keeps
# the ABI of every release (abi/: abidw's dumps of libzvmm 0.1.0, 0.2.0):
# additions are fine, an incompatible change (abidiff's bit 8) or an
# error fails. Skipped, saying so, without g++ or abidiff.
header-cxx:
	$(Q)if command -v $(CXX) >/dev/null; then \
		$(CXX) -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only \
			-Iinclude tests/header.cc; \
	else echo "header-cxx: skipped: no $(CXX) (make deps)"; fi

# libzvmm.a linked into a program and into a shared object (a plugin, a
# language binding), as embedders do.
static-check: $(LIBZ_A)
	$(Q)$(CC) $(CFLAGS) -shared -o $(O)/static-check.so tests/static_link.c \
		$(LIBZ_A) $(LIBZ_LIBS)
	$(Q)$(CC) $(CFLAGS) -DSTATIC_CHECK_MAIN -o $(O)/static-check \
		tests/static_link.c $(LIBZ_A) $(LIBZ_LIBS)
	$(Q)$(O)/static-check

abi-check: lib
	$(Q)if command -v abidiff >/dev/null; then \
		for a in abi/libzvmm-*.abi; do \
			v=$${a#abi/libzvmm-}; v=$${v%.abi}; \
			abidiff --headers-dir2 include/zvmm $$a \
				$(LIBZ_SO) >$(O)/abidiff-$$v.txt; rc=$$?; \
			if [ $$((rc & 11)) -ne 0 ]; then cat $(O)/abidiff-$$v.txt; \
				echo "abi-check: libzvmm breaks the $$v ABI (abidiff $$rc)" >&2; \
				exit 1; fi; \
		done; \
	else echo "abi-check: skipped: no abidiff (make deps: abigail-tools)"; fi

test-unit: $(O)/zvmm $(ZVMMD) $(HOSTILE_ELF) $(TEST_RUNNER) $(STRESS) $(MODEL) lib \
		$(SECCOMP_TENANT) $(SECCOMP_ZVMMD) \
		header-cxx abi-check static-check rust-sys-check
	$(Q)rm -rf $(O)/test-cache $(O)/test-state $(O)/test-report.tap \
		$(O)/test-fini.log
	$(Q)tests/host-state.sh save $(O)/test-host-before
	$(Q)export TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
		ZVMM_CACHE_DIR=$(abspath $(O))/test-cache \
		ZVMM_STATE_DIR=$(abspath $(O))/test-state; st=0; \
	$(STRESS) $(STRESS_SEEDS) || st=1; \
	$(MODEL) $(MODEL_SEEDS) || st=1; \
	ZVMM_BIN=$(O)/zvmm ZVMMD_BIN=$(O)/zvmmd ZVMM_LIB=$(abspath $(TEST_LIB)) \
		ZVMM_SECCOMP_TENANT=$(abspath $(SECCOMP_TENANT)) \
		ZVMM_SECCOMP_ZVMMD=$(abspath $(SECCOMP_ZVMMD)) \
		ZVMM_TEST_FINI_LOG=$(abspath $(O))/test-fini.log \
		$(TEST_RUNNER) -j1 --tap=$(O)/test-report.tap $(TEST_ARGS) || st=1; \
	if [ -f $(O)/test-report.tap ]; then \
		python3 tests/report.py $(O)/test-report.tap \
			$(O)/test-fini.log || st=1; \
	else echo "test: the runner wrote no report" >&2; st=1; fi; \
	tests/host-state.sh check $(O)/test-host-before || st=1; \
	exit $$st

FORCE:

test: test-arm64 test-unit

# The suite (bench/suite.sh, root, ~10 min): backends, launch against
# QEMU, fault latency against chunk size; report, JSON and plots in
# bench/results/. bench-smoke runs one small size per method (CI).
bench: $(O)/zvmm $(ZVMMD) $(O)/bench/poison $(O)/bench/membw \
		$(O)/bench/storm-tenant
	$(Q)ZVMM=$(O)/zvmm ELF=$(GUEST_ELF) POISON=$(O)/bench/poison \
		bash bench/suite.sh

bench-smoke: $(O)/zvmm $(O)/bench/poison
	$(Q)ZVMM=$(O)/zvmm ELF=$(GUEST_ELF) POISON=$(O)/bench/poison \
		OUT=$(O)/bench-smoke bash bench/suite.sh --smoke

# The backend table alone.
bench-backends: $(O)/zvmm
	$(Q)$(O)/zvmm bench $(BENCH_ARGS)

$(O)/bench/poison: bench/tools/poison.c
	@mkdir -p $(dir $@)
	$(quiet) CC $@
	$(Q)$(CC) $(CFLAGS) -o $@ $<

$(O)/bench/membw: bench/tools/membw.c
	@mkdir -p $(dir $@)
	$(quiet) CC $@
	$(Q)$(CC) $(CFLAGS) -o $@ $<

# The storm's libzvmm tenant where no guest boots (no /dev/kvm).
$(O)/bench/storm-tenant: bench/tools/storm-tenant.c $(LIBZ_A)
	@mkdir -p $(dir $@)
	$(quiet) CC $@
	$(Q)$(CC) $(CFLAGS) -Iinclude $(LDFLAGS) -o $@ $< $(LIBZ_A) $(LIBZ_LIBS)

# Launch and demand benchmarks against QEMU and across policies (root).
# zvmmd's launch storm alone (bench/storm.sh; also section 7 of make bench);
# without /dev/kvm, its memory side through bench/tools/storm-tenant.c.
bench-storm: $(O)/zvmm $(ZVMMD) $(O)/bench/membw $(O)/bench/storm-tenant
	$(Q)ZVMM=$(O)/zvmm ZVMMD=$(ZVMMD) ELF=$(GUEST_ELF) \
		MEMBW=$(O)/bench/membw TENANT=$(O)/bench/storm-tenant \
		bash bench/storm.sh

# QEMU on memory from zvmm exec (a clean record, a zvmmd lease) against
# QEMU's prealloc=on and the kernel's first-touch zeroing (bench/exec.sh;
# also section 8 of make bench). TCG where /dev/kvm is missing.
bench-exec: $(O)/zvmm $(ZVMMD)
	$(Q)ZVMM=$(O)/zvmm ZVMMD=$(ZVMMD) ELF=$(GUEST_ELF) bash bench/exec.sh

bench-launch: $(O)/zvmm
	$(Q)ZVMM=$(O)/zvmm ELF=$(GUEST_ELF) bash bench/launch.sh

bench-demand: $(O)/zvmm $(O)/bench/poison
	$(Q)ZVMM=$(O)/zvmm POISON=$(O)/bench/poison bash bench/demand.sh

# The state directory bounded over pool files that come and go
# (bench/record-soak.sh, root, DURATION=600 s; no /dev/kvm needed).
bench-record-soak: $(O)/zvmm
	$(Q)ZVMM=$(O)/zvmm bash bench/record-soak.sh

# libFuzzer targets for the parsers (fuzz/README.md): clang with ASan and
# UBSan, every module they link compiled again under build/fuzz/obj/.
# fuzz-smoke replays fuzz/regress/ and fuzz/corpus/, then fuzzes each
# target FUZZ_SECONDS over a scratch copy of its corpus; any crash fails.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 20
FUZZ_O := build/fuzz
FUZZ_TARGETS := size policy pvh report record zvmmd zvmmd_conf status profile
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_CFLAGS := -O1 -g -std=gnu11 $(WARNINGS) -D_GNU_SOURCE -MMD -MP \
	$(FUZZ_SAN) -fsanitize=fuzzer-no-link \
	$(shell $(PKG_CONFIG) --cflags inih numa json-c 2>/dev/null)
FUZZ_LIBS = $(shell $(PKG_CONFIG) --libs inih numa json-c 2>/dev/null)

FUZZ_size_SRCS := lib/size.c
FUZZ_policy_SRCS := zeroing/policy.c lib/size.c lib/file.c lib/inibuf.c \
	lib/inival.c lib/ranges.c
FUZZ_pvh_SRCS := vmm/pvh.c vmm/kvm.c lib/log.c lib/inject.c lib/clock.c
FUZZ_report_SRCS := vmm/devices.c vmm/kvm.c lib/log.c lib/inject.c lib/clock.c
FUZZ_record_SRCS := zeroing/record.c lib/file.c lib/inibuf.c lib/safefile.c lib/log.c
FUZZ_zvmmd_SRCS := lib/zvmmd_proto.c
FUZZ_zvmmd_conf_SRCS := service/config.c lib/file.c lib/inibuf.c \
	lib/inival.c lib/ranges.c lib/safefile.c lib/size.c
FUZZ_status_SRCS := lib/zvmmd_status.c lib/size.c
FUZZ_profile_SRCS := zeroing/calibrate.c zeroing/backend.c $(ARCH_SRCS) \
	lib/clock.c lib/file.c lib/inibuf.c lib/log.c lib/safefile.c \
	lib/size.c lib/stats.c lib/sysfs.c
# The largest input each target takes, so that libFuzzer's inputs reach
# it (its default is 4 KiB): one argument (MAX_ARG_STRLEN), a policy,
# config or profile file (1 MiB: policy.c, config.c, calibrate.c), the
# loader's 4 MiB of RAM, a few report lines of VMM_LINE_MAX, a record
# (record.c), a zvmmd message and one byte more (ZVMMD_MSG_MAX), a
# STATUS_OK body.
FUZZ_MAXLEN_size := 131072
FUZZ_MAXLEN_policy := 1048576
FUZZ_MAXLEN_pvh := 4194304
FUZZ_MAXLEN_report := 16384
FUZZ_MAXLEN_record := 65536
FUZZ_MAXLEN_zvmmd := 65537
FUZZ_MAXLEN_zvmmd_conf := 1048576
FUZZ_MAXLEN_status := 65520
FUZZ_MAXLEN_profile := 1048576
FUZZ_BINS := $(addprefix $(FUZZ_O)/,$(FUZZ_TARGETS))
FUZZ_SEEDS_PVH := $(FUZZ_O)/seeds/pvh/.stamp

fuzz: $(FUZZ_BINS)

$(FUZZ_O)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@command -v $(FUZZ_CC) >/dev/null || { echo "$(FUZZ_CC) not found: run 'make deps'" >&2; exit 1; }
	$(quiet) FUZZCC $@
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

# clang's <cpuid.h> has __get_cpuid_max() return int, GCC's unsigned.
$(FUZZ_O)/obj/arch/x86/cpu.o: FUZZ_CFLAGS += -Wno-sign-compare

$(FUZZ_O)/obj/%.o: %.S
	@mkdir -p $(dir $@)
	$(quiet) FUZZAS $@
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

fuzz_objs = $(patsubst %,$(FUZZ_O)/obj/%.o,$(basename fuzz/fuzz_$(1).c $(FUZZ_$(1)_SRCS)))
define fuzz_link
$(FUZZ_O)/$(1): $(call fuzz_objs,$(1))
	$$(quiet) FUZZLD $$@
	$$(Q)$$(FUZZ_CC) $$(FUZZ_SAN) -fsanitize=fuzzer -o $$@ $$^ $$(FUZZ_LIBS)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_link,$(t))))

# Seeds for the PVH loader made from the guest this tree builds; the
# committed fuzz/corpus/pvh/ holds a copy (mkseeds-pvh GUEST DIR).
$(FUZZ_O)/mkseeds-pvh: fuzz/mkseeds_pvh.c guest/pvh.h
	@mkdir -p $(dir $@)
	$(quiet) CC $@
	$(Q)$(CC) -O2 -g -std=gnu11 $(WARNINGS) -o $@ $<

$(FUZZ_SEEDS_PVH): $(FUZZ_O)/mkseeds-pvh $(GUEST_ELF)
	@rm -rf $(dir $@) && mkdir -p $(dir $@)
	$(quiet) SEEDS $(dir $@)
	$(Q)$(FUZZ_O)/mkseeds-pvh $(GUEST_ELF) $(dir $@) && cp $(GUEST_ELF) $(dir $@) && touch $@

fuzz-seeds: $(FUZZ_SEEDS_PVH)

# Inputs of fuzz/regress/T and fuzz/corpus/T, run once each.
fuzz_inputs = $(shell find fuzz/regress/$(1) fuzz/corpus/$(1) -type f \
	! -name README.md ! -name .gitkeep 2>/dev/null | sort)

# $(call fuzz_one,T,SECONDS): replay, then fuzz over build/fuzz/work/T
# (new inputs land there, never in fuzz/corpus/) and the generated seeds;
# crash inputs go to build/fuzz/crashes/T/.
define fuzz_one
	@echo "  FUZZ     $(1): replay $(words $(call fuzz_inputs,$(1))) inputs, then $(2) s"
	$(Q)$(if $(call fuzz_inputs,$(1)),$(FUZZ_O)/$(1) $(call fuzz_inputs,$(1)) >$(FUZZ_O)/$(1).replay.log 2>&1 \
		|| { cat $(FUZZ_O)/$(1).replay.log >&2; echo "fuzz $(1): a regression input fails" >&2; exit 1; })
	$(Q)mkdir -p $(FUZZ_O)/work/$(1) $(FUZZ_O)/crashes/$(1)
	$(Q)$(FUZZ_O)/$(1) -max_total_time=$(2) -print_final_stats=1 \
		-max_len=$(FUZZ_MAXLEN_$(1)) \
		-artifact_prefix=$(FUZZ_O)/crashes/$(1)/ $(FUZZ_ARGS) \
		$(FUZZ_O)/work/$(1) $(wildcard fuzz/corpus/$(1) $(FUZZ_O)/seeds/$(1)) \
		>$(FUZZ_O)/$(1).log 2>&1 \
		|| { tail -n 60 $(FUZZ_O)/$(1).log >&2; echo "fuzz $(1): crashed, input in $(FUZZ_O)/crashes/$(1)/" >&2; exit 1; }
	@grep -E '^#[0-9]+.*(DONE|pulse)' $(FUZZ_O)/$(1).log | tail -n 1 | sed 's/^/           /'
	@grep -E 'stat::(number_of_executed_units|average_exec_per_sec)' $(FUZZ_O)/$(1).log | sed 's/^/           /'

endef

fuzz-smoke: $(FUZZ_BINS) $(FUZZ_SEEDS_PVH)
	$(Q)rm -rf $(FUZZ_O)/work
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz_one,$(t),$(FUZZ_SECONDS)))

# One target for longer, keeping what it finds in build/fuzz/work/TARGET:
# make fuzz-run TARGET=pvh FUZZ_SECONDS=600
fuzz-run: $(FUZZ_BINS) $(FUZZ_SEEDS_PVH)
	@test -n "$(filter $(TARGET),$(FUZZ_TARGETS))" || { echo "TARGET= one of: $(FUZZ_TARGETS)" >&2; exit 2; }
	$(call fuzz_one,$(TARGET),$(FUZZ_SECONDS))

deps:
	@if [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends $(DEB_PACKAGES); \
	else \
		echo "run as root, or: sudo apt-get install -y --no-install-recommends $(DEB_PACKAGES)"; \
	fi

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build

-include $(sort $(shell find $(O) $(FUZZ_O) -name '*.d' 2>/dev/null))
