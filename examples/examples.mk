# examples.mk - small programs that use the public API; the offline demo runs them.
EXAMPLE_SRCS := $(wildcard examples/*.c)
EXAMPLE_BINS := $(EXAMPLE_SRCS:examples/%.c=$(B)/examples/%)

# Linked against the shared library, as a user's program would be.
$(B)/examples/%: $(B)/examples/%.o $(LIBLOCKSTEP_SO)
	$(CC) -o $@ $< $(ALL_LDFLAGS) -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../lib' -llockstep -lm

ALL_TARGETS += $(EXAMPLE_BINS)
EXTRA_CFLAGS_examples = -Iinclude
