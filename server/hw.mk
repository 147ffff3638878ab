# hw.mk - the suspects, alerts and Slurm-action parts of lockstepd: libcurl for the alert sinks, unit tests of the score and evidence rules, the fleet tier.
SERVER_PKGS += libcurl

# Unit tests of the pure parts (no database): tests/unit/test_score.c.
TEST_OBJS_test_score = $(B)/server/rules/score.o $(B)/server/fleet/evidence.o $(B)/server/alerts/sinks.o \
  $(B)/server/alerts/mailmap.o $(B)/server/core/config.o $(B)/server/core/state.o $(B)/server/core/log.o \
  $(B)/server/core/xalloc.o $(VERSION_OBJ)
TEST_LIBS_test_score = $(call pc_libs,jansson libcurl) -lm
$(B)/tests/unit/test_score.o: EXTRA_CFLAGS_tests += $(call pc_cflags,jansson libcurl)
# Where alert mail may go (server/alerts/mailmap.h): tests/unit/test_mailmap.c.
TEST_OBJS_test_mailmap = $(B)/server/alerts/mailmap.o $(B)/server/core/xalloc.o
# The classification in a dozen words (server/rules/class_summary.h): tests/unit/test_class_summary.c.
TEST_OBJS_test_class_summary = $(B)/server/rules/class_summary.o


# The fleet scenario on the local 4-node Slurm: lockstep-train twins, a fault on n3, alerts to real receivers.
TEST_TIERS += tests/slurm/fleet.sh tests/slurm/narrow.sh
