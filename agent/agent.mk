# agent.mk - liblockstep.so and liblockstep.a: the API, trace files (and later streaming).
AGENT_SRCS := $(wildcard agent/*.c)
AGENT_OBJS := $(AGENT_SRCS:%.c=$(B)/%.o)
LIBLOCKSTEP_SO := $(B)/lib/liblockstep.so
LIBLOCKSTEP_A := $(B)/lib/liblockstep.a
AGENT_LIBS := -lpthread

$(LIBLOCKSTEP_SO): $(AGENT_OBJS) $(COMMON_OBJS) agent/liblockstep.map
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $(AGENT_OBJS) $(COMMON_OBJS) $(ALL_LDFLAGS) $(HARDEN_LD) \
	  -Wl,--version-script=agent/liblockstep.map -Wl,-soname,liblockstep.so $(AGENT_LIBS)

# The static archive carries the common objects too, so one -llockstep links.
$(LIBLOCKSTEP_A): $(AGENT_OBJS) $(COMMON_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

ALL_TARGETS += $(LIBLOCKSTEP_SO) $(LIBLOCKSTEP_A)
INSTALL_LIB += $(LIBLOCKSTEP_SO) $(LIBLOCKSTEP_A)
