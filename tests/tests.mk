# tests.mk - the test tiers. Unit tests (cmocka) are tests/unit/test_*.c, each linked with
# the CLI and agent archives; a part adds a shell or integration tier by appending a
# script to TEST_TIERS (each tier ends with a line "N passed, N failed").
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/unit/%)
TEST_LIBS = $(call pc_libs,cmocka jansson libxxhash libcurl libcrypto) -lpthread -lm

EXTRA_CFLAGS_tests = $(call pc_cflags,cmocka jansson)

# A test may name extra objects and libraries: TEST_OBJS_test_x, TEST_LIBS_test_x.
.SECONDEXPANSION:
$(B)/tests/unit/%: $(B)/tests/unit/%.o $(LIBCLI) $(LIBLOCKSTEP_A) $$(TEST_OBJS_$$*)
	$(CC) -o $@ $< $(TEST_OBJS_$*) $(LIBCLI) $(LIBLOCKSTEP_A) $(ALL_LDFLAGS) $(TEST_LIBS) $(TEST_LIBS_$*)

ALL_TARGETS += $(UNIT_BINS)
TEST_TIERS := tests/layout/run.sh tests/abi/run.sh tests/cli/run.sh tests/cli/server.sh $(TEST_TIERS) tests/demo/run.sh

check: all
	@tests/run-all.sh $(B) $(UNIT_BINS) -- $(TEST_TIERS)
