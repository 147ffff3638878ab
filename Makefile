# Makefile - the one entry point: make, make test, make bench, make demo, make install, make clean.
#
#   make                 build everything (out of tree, under build/)
#   make test            install missing dependencies, build, run every test tier
#   make test SAN=1      the same under AddressSanitizer + UBSan (build/san/)
#   make bench           run the benchmarks; each prints one JSON line
#   make demo            lockstepd, a 4-node local Slurm and real twin jobs (see README.md)
#   make demo-stop       stop what make demo left running
#   make install PREFIX=/usr/local
#   make deb             Debian packages (lockstepd, lockstep-node, lockstep, python3-lockstep, liblockstep-dev)
#                        under build/deb/, built with dpkg-buildpackage from a copy of the tree (docs/install.md)
#   make format          lay C out as .clang-format says; make format-check fails on a file it would change
#   make CUDA=0          never compile CUDA parts, even where nvcc exists
#   make HOOKS=0         leave .git/hooks alone (make installs the commit-msg hook of deploy/hooks/ otherwise)

SAN ?= 0
PREFIX ?= /usr/local
CC ?= gcc
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
ifeq ($(origin CUDA),undefined)
  CUDA := $(if $(NVCC),1,0)
endif

ifeq ($(SAN),1)
  B := build/san
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else
  B := build
  SANFLAGS :=
  # Release builds check buffer sizes at run time too (glibc's fortified calls abort on an overflow), so every test
  # tier runs what packages ship; ASan does that job in the sanitizer build.
  BUILD_HARDEN = $(HARDEN)
endif

# Libraries, through pkg-config (evaluated when first used).
pc_cflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pc_libs = $(shell pkg-config --libs $(1) 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=gnu11 $(CFLAGS) $(WARN) $(SANFLAGS) $(BUILD_HARDEN) -fPIC -fvisibility=hidden -I. -D_GNU_SOURCE -MMD -MP
ALL_LDFLAGS = $(LDFLAGS) $(SANFLAGS)
HARDEN := -fstack-protector-strong -D_FORTIFY_SOURCE=2
HARDEN_LD := -Wl,-z,relro,-z,now

.DEFAULT_GOAL := all
.PHONY: all test check bench demo demo-stop demo-offline install programs install-programs clean deps format format-check
.SUFFIXES:

# Each part adds its outputs to these lists in its own fragment.
ALL_TARGETS :=
UNIT_TESTS :=
TEST_TIERS :=
BENCHES :=
INSTALL_BIN :=
INSTALL_LIB :=
INSTALL_SBIN :=
INSTALL_COMPLETION :=

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(EXTRA_CFLAGS_$(firstword $(subst /, ,$<))) -c $< -o $@

include common/common.mk
include agent/agent.mk
include cli/cli.mk
-include server/server.mk
-include kernels/kernels.mk
-include spank/spank.mk
-include web/web.mk
-include agent/python/python.mk
include examples/examples.mk
include bench/bench.mk
-include deploy/deb/deb.mk
include tests/tests.mk

# The commit message rule (deploy/hooks/commit-msg, CONTRIBUTING.md) as the checkout's git hook: installed when the
# tree is a git checkout (a copy, such as make deb's, has no .git), and never over a commit-msg hook of another
# origin. make HOOKS=0 leaves the hooks alone.
HOOKS ?= 1
ifeq ($(HOOKS)$(wildcard .git),1.git)
GIT_HOOK := $(shell git rev-parse --git-path hooks/commit-msg 2>/dev/null)
ifneq ($(GIT_HOOK),)
ALL_TARGETS += $(GIT_HOOK)
$(GIT_HOOK): deploy/hooks/commit-msg
	@mkdir -p $(@D)
	@if [ ! -e $@ ] || grep -q '^# commit-msg - the commit message rule' $@; then \
	  cp $< $@.tmp && chmod 755 $@.tmp && mv $@.tmp $@ && echo "make: installed $@ (the commit message rule)"; fi
endif
endif

all: $(ALL_TARGETS)

deps:
	@deploy/install-deps.sh

# `make test`: dependencies first, then a fresh make that can see them.
test: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all SAN=$(SAN)
	@$(MAKE) --no-print-directory check SAN=$(SAN)

bench: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@$(MAKE) --no-print-directory bench-run

demo: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@deploy/demo/demo.sh -b $(B)

demo-stop:
	@deploy/demo/stop.sh $(B)/demo

# The offline example: no services, two traced runs of examples/toy_train and `lockstep diff`.
demo-offline: all
	@examples/demo.sh $(B)

install: all install-programs

# What `make install` installs, built and installed without the tests and benchmarks (the Debian packages take
# these two and install-web).
programs: $(INSTALL_BIN) $(INSTALL_SBIN) $(INSTALL_LIB) $(INSTALL_COMPLETION)

install-programs: programs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include
	install -m 755 $(INSTALL_BIN) $(DESTDIR)$(PREFIX)/bin/
	$(if $(INSTALL_SBIN),install -m 755 $(INSTALL_SBIN) $(DESTDIR)$(PREFIX)/sbin/)
	install -m 644 $(INSTALL_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/lockstep.h $(DESTDIR)$(PREFIX)/include/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 $(INSTALL_COMPLETION) $(DESTDIR)$(PREFIX)/share/bash-completion/completions/

clean:
	rm -rf build

# The C layout is .clang-format's, by Debian 12's clang-format 14 (pinned: another release lays some lines out
# otherwise); `make format` applies it, `make format-check` (in .ci/run) fails on any file it would change.
CLANG_FORMAT ?= clang-format-14
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' '*.cu')
format:
	$(CLANG_FORMAT) -i $(FORMAT_FILES)

format-check:
	@command -v $(CLANG_FORMAT) >/dev/null || { echo "format-check: no $(CLANG_FORMAT); run deploy/install-deps.sh" >&2; exit 1; }
	@if $(CLANG_FORMAT) --dry-run --Werror $(FORMAT_FILES) 2>/dev/null; then \
	  echo "format-check: $(words $(FORMAT_FILES)) files keep .clang-format"; \
	else \
	  echo "format-check: these files differ from .clang-format:" >&2; \
	  for f in $(FORMAT_FILES); do $(CLANG_FORMAT) --dry-run --Werror $$f >/dev/null 2>&1 || echo "  $$f" >&2; done; \
	  echo "hint: make format, then commit the result" >&2; exit 1; \
	fi

-include $(shell find build -name '*.d' 2>/dev/null)
