# common.mk - code the agent, server and CLI share: LSFP-1, CRC32C, record framing, trace spec.
COMMON_SRCS := $(wildcard common/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(B)/%.o)
LIBCOMMON := $(B)/libcommon.a

$(LIBCOMMON): $(COMMON_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^
