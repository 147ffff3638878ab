# common.mk - code the agent, server and CLI share: LSFP-1, CRC32C, record framing, trace spec.
COMMON_SRCS := $(wildcard common/*.c)
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
