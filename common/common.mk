# common.mk - code the agent, server and CLI share: LSFP-1, CRC32C, record framing, trace spec.
COMMON_SRCS := $(filter-out common/version.c,$(wildcard common/*.c))
COMMON_OBJS := $(COMMON_SRCS:%.c=$(B)/%.o)
LIBCOMMON := $(B)/libcommon.a

$(LIBCOMMON): $(COMMON_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# common/json/: shared code that needs Jansson (the manifest diff). Linked by lockstepd and the CLI, never by
# liblockstep.so, which links nothing but libc.
COMMON_JSON_SRCS := $(wildcard common/json/*.c)
COMMON_JSON_OBJS := $(COMMON_JSON_SRCS:%.c=$(B)/%.o)
EXTRA_CFLAGS_common += $(call pc_cflags,jansson)

# tests/unit/test_envrule.c also checks the plugin's per-user digest key (common/crypto/token.c).
TEST_OBJS_test_envrule = $(TOKEN_OBJS)
TEST_LIBS_test_envrule = $(TOKEN_LIBS)

# The release and commit every program reports (common/version.h): deploy/version.sh's answers, compiled into
# common/version.o, which is rebuilt when they change (the stamp is rewritten only then). Not in libcommon.a: only
# the programs that report a version link it (VERSION_OBJ), so a commit relinks only them.
VERSION_OBJ := $(B)/common/version.o
VERSION_STAMP := $(B)/version.stamp
VERSION_NOW = $(shell deploy/version.sh 2>/dev/null || echo unknown) $(shell deploy/version.sh --commit 2>/dev/null || echo unknown)
$(VERSION_STAMP): FORCE
	@mkdir -p $(@D)
	@v='$(VERSION_NOW)'; [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
$(B)/common/version.o: $(VERSION_STAMP)
$(B)/common/version.o: EXTRA_CFLAGS_common += -DLOCKSTEP_VERSION='"$(word 1,$(VERSION_NOW))"' \
  -DLOCKSTEP_COMMIT='"$(word 2,$(VERSION_NOW))"'
.PHONY: FORCE
FORCE:
