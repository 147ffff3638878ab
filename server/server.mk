# server.mk - lockstepd (server/), its schema (sql/migrations/, sql/functions/), integration and fuzz tests, and bench/ingest.
SERVER_SRCS := $(wildcard server/*/*.c)
SERVER_OBJS := $(SERVER_SRCS:%.c=$(B)/%.o) $(B)/server/migrations.o
LOCKSTEPD := $(B)/bin/lockstepd
MIGRATIONS := $(sort $(wildcard sql/migrations/[0-9]*.sql))
SQL_FUNCTIONS := $(sort $(wildcard sql/functions/*.sql))

# The token module (HMAC-SHA256 via OpenSSL) sits apart from common/*.c so that
# liblockstep.so does not link OpenSSL; the SPANK plugin and CLI link these too.
TOKEN_OBJS := $(B)/common/crypto/token.o
TOKEN_LIBS = $(call pc_libs,libcrypto)

SERVER_PKGS := libmicrohttpd jansson libpq libcrypto
EXTRA_CFLAGS_server = $(call pc_cflags,$(SERVER_PKGS)) -I$(shell pg_config --includedir 2>/dev/null)
SERVER_LIBS = $(call pc_libs,$(SERVER_PKGS)) -lpthread -lm

# The schema compiled into lockstepd; gen-migrations.sh refuses a migration that defines a function and a function
# defined twice (sql/README.md). The folders are prerequisites too: a file removed or renamed leaves no newer file,
# but changes its folder's time.
$(B)/server/migrations.c: $(MIGRATIONS) $(SQL_FUNCTIONS) sql/migrations sql/functions server/store/gen-migrations.sh
	@mkdir -p $(@D)
	server/store/gen-migrations.sh $(MIGRATIONS) -- $(SQL_FUNCTIONS) > $@.tmp
	mv $@.tmp $@

$(B)/server/migrations.o: $(B)/server/migrations.c
	$(CC) $(ALL_CFLAGS) $(EXTRA_CFLAGS_server) -c $< -o $@

$(LOCKSTEPD): $(B)/server/main.o $(SERVER_OBJS) $(VERSION_OBJ) $(TOKEN_OBJS) $(COMMON_JSON_OBJS) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(HARDEN_LD) -Wl,--export-dynamic-symbol=MHD_create_response_from_buffer \
	  $(SERVER_LIBS)
# The exported MHD_create_response_from_buffer turns libmicrohttpd's own HTML error pages into JSON
# (server/http/mhd_errors.c).

ALL_TARGETS += $(LOCKSTEPD)
INSTALL_SBIN += $(LOCKSTEPD)
# Installed, lockstepd serves the dashboard from PREFIX/share/lockstep/web (web/web.mk installs it).
$(B)/server/main.o: EXTRA_CFLAGS_server += -DLOCKSTEP_SHARE='"$(PREFIX)/share/lockstep"' 

# Unit tests of server modules (tests/unit/test_batch.c, test_token.c, test_target.c, ...).
TEST_OBJS_test_batch := $(B)/server/store/batch.o $(B)/server/store/cons_batch.o $(B)/server/core/xalloc.o $(B)/server/core/error.o
TEST_OBJS_test_cons_mem := $(B)/server/consensus/cons_mem.o $(B)/server/core/clock.o $(B)/server/core/xalloc.o
TEST_OBJS_test_fwd_line := $(B)/server/peers/fwd_line.o
TEST_OBJS_test_db_lit := $(B)/server/store/db_lit.o $(B)/server/core/xalloc.o
TEST_OBJS_test_status := $(B)/server/rules/status.o
TEST_OBJS_test_noise := $(B)/server/rules/noise.o
TEST_OBJS_test_replay := $(B)/server/rules/replay.o $(B)/server/rules/replay_plan.o $(B)/server/core/xalloc.o
TEST_OBJS_test_replay_diff := $(B)/server/rules/replay_diff.o $(B)/server/core/xalloc.o
TEST_OBJS_test_token := $(TOKEN_OBJS)
TEST_OBJS_test_target := $(B)/server/http/target.o $(B)/server/core/xalloc.o
TEST_OBJS_test_members := $(B)/server/rules/members.o
TEST_OBJS_test_run_outcome := $(B)/server/rules/outcome.o
TEST_OBJS_test_first_json := $(B)/server/twins/first_json.o
TEST_OBJS_test_divergence := $(B)/server/twins/divergence.o $(B)/server/core/xalloc.o
TEST_OBJS_test_delta := $(B)/server/rules/delta.o
TEST_OBJS_test_groups := $(B)/server/rules/group_rule.o
TEST_OBJS_test_hw_rule := $(B)/server/rules/hw_rule.o
TEST_OBJS_test_cons_evidence := $(B)/server/rules/cons_evidence.o
TEST_LIBS_test_token = $(TOKEN_LIBS)

# Integration test support shared by the tests and the benchmark.
HARNESS_OBJS := $(B)/tests/integration/harness.o
HARNESS_LIBS = $(call pc_libs,libcurl jansson) -lpthread

# bench/ingest: N loopback clients posting binary batches to lockstepd.
BENCH_INGEST := $(B)/bench/ingest/ingest
EXTRA_CFLAGS_bench += $(call pc_cflags,libcurl jansson libpq)
$(BENCH_INGEST): $(B)/bench/ingest/ingest.o $(HARNESS_OBJS) $(LIBCOMMON) | $(LOCKSTEPD)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(HARNESS_LIBS) $(call pc_libs,libpq) -lm
ALL_TARGETS += $(BENCH_INGEST)
BENCHES += $(BENCH_INGEST)

# bench/fleet: one lockstepd under the streams of 10,000 simulated ranks (digest streaming) for two minutes.
BENCH_FLEET := $(B)/bench/fleet/fleet
$(BENCH_FLEET): $(B)/bench/fleet/fleet.o $(B)/bench/fleet/consensus.o $(B)/bench/fleet/post.o $(HARNESS_OBJS) $(LIBCOMMON) | $(LOCKSTEPD)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(HARNESS_LIBS) $(call pc_libs,libpq) -lm
ALL_TARGETS += $(BENCH_FLEET)
BENCHES += $(BENCH_FLEET)

# Integration tier: cmocka binaries against a private PostgreSQL and real lockstepd processes.
IT_SRCS := $(wildcard tests/integration/test_*.c)
IT_BINS := $(IT_SRCS:tests/integration/%.c=$(B)/tests/integration/%)
IT_OBJS := $(B)/tests/integration/common.o $(HARNESS_OBJS) $(TOKEN_OBJS)
$(B)/tests/integration/%.o: EXTRA_CFLAGS_tests += $(call pc_cflags,libpq)
$(B)/tests/integration/test_%: $(B)/tests/integration/test_%.o $(IT_OBJS) $(LIBCOMMON) | $(LOCKSTEPD)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(call pc_libs,cmocka libpq) $(HARNESS_LIBS) $(TOKEN_LIBS) -lm
ALL_TARGETS += $(IT_BINS)
# bench/fleet's poster, tested against a real lockstepd
$(B)/tests/integration/test_fleet_post: $(B)/bench/fleet/post.o
TEST_TIERS += tests/integration/run.sh
# The SQL tier: SQL that restates a C rule, held to that rule's case table (tests/data/), and the checks of the sql/
# split (sql/README.md). Each binary starts its own PostgreSQL and applies lockstepd's schema with db_migrate.
SQLT_BINS := $(patsubst tests/sql/%.c,$(B)/tests/sql/%,$(wildcard tests/sql/test_*.c))
SQLT_OBJS := $(B)/tests/sql/sqlt.o $(HARNESS_OBJS) $(B)/server/store/migrate.o $(B)/server/migrations.o \
  $(B)/server/store/db.o $(B)/server/core/log.o $(B)/server/core/metrics.o $(B)/server/core/xalloc.o \
  $(B)/server/core/error.o $(B)/server/core/clock.o $(B)/server/rules/members.o $(B)/server/store/sql.o $(VERSION_OBJ)
$(B)/tests/sql/%.o: EXTRA_CFLAGS_tests += $(call pc_cflags,libpq)
$(B)/tests/sql/test_%: $(B)/tests/sql/test_%.o $(SQLT_OBJS) $(LIBCOMMON) | $(LOCKSTEPD)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(call pc_libs,cmocka libpq) $(HARNESS_LIBS) -lm
ALL_TARGETS += $(SQLT_BINS)
TEST_TIERS += tests/sql/run.sh
# The compare tier: lockstep-train runs streamed into lockstepd, judged by `lockstep compare` (docs/compare.md).
TEST_TIERS += tests/compare/run.sh

# Fuzz tier: libFuzzer targets for the ingest decoders and the text parsers, built with clang (sanitizers on),
# run briefly.
FUZZ_CC ?= $(firstword $(shell command -v clang-14 clang 2>/dev/null))
FUZZ_SRCS := server/store/batch.c server/store/cons_batch.c common/consensus.c server/core/xalloc.c server/core/error.c common/text.c common/record.c common/recmatch.c common/crc32c.c common/lsfp1.c common/dtype.c
ifneq ($(FUZZ_CC),)
$(B)/tests/fuzz/fuzz_batch: tests/fuzz/fuzz_batch.c $(FUZZ_SRCS) server/store/batch.h server/store/cons_batch.h common/record.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -g -O1 -I. -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(call pc_cflags,jansson) tests/fuzz/fuzz_batch.c $(FUZZ_SRCS) -o $@ $(call pc_libs,jansson) -lm
ALL_TARGETS += $(B)/tests/fuzz/fuzz_batch
FUZZ_TEXT_SRCS := common/tracespec.c common/dtype.c common/text.c common/hostlist.c kernels/train_opts.c \
  server/core/config.c server/core/log.c server/core/xalloc.c server/http/target.c common/version.c
$(B)/tests/fuzz/fuzz_text: tests/fuzz/fuzz_text.c $(FUZZ_TEXT_SRCS) common/tracespec.h kernels/train_opts.h server/core/config.h \
  common/hostlist.h common/text.h server/http/target.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -g -O1 -I. -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(call pc_cflags,jansson) tests/fuzz/fuzz_text.c $(FUZZ_TEXT_SRCS) -o $@ $(call pc_libs,jansson) -lm
ALL_TARGETS += $(B)/tests/fuzz/fuzz_text
endif
$(B)/tests/fuzz/seeds: $(B)/tests/fuzz/seeds.o $(LIBCOMMON)
	$(CC) -o $@ $^ $(ALL_LDFLAGS)
ALL_TARGETS += $(B)/tests/fuzz/seeds
TEST_TIERS += tests/fuzz/run.sh

# Suspects, alerts and the Slurm action: their own fragment.
-include server/hw.mk
