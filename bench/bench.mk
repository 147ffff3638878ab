# bench.mk - benchmarks; each binary or script prints one JSON line of figures.
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(B)/bench/%)
EXTRA_CFLAGS_bench += $(call pc_cflags,libxxhash)

$(B)/bench/%: $(B)/bench/%.o $(LIBLOCKSTEP_A)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(call pc_libs,libxxhash) -lpthread -lm

ALL_TARGETS += $(BENCH_BINS)
BENCHES += $(BENCH_BINS)

bench-run: $(BENCHES)
	@for b in $(BENCHES); do $$b || exit 1; done

# bench/api: the read API behind the twin-group page, on 10,000 steps x 64 ranks
# (uses the integration harness from server.mk to run a private lockstepd).
ifneq ($(HARNESS_OBJS),)
BENCH_API := $(B)/bench/api/api
$(BENCH_API): $(B)/bench/api/api.o $(HARNESS_OBJS) $(LIBCOMMON) | $(LOCKSTEPD)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(HARNESS_LIBS) -lm
ALL_TARGETS += $(BENCH_API)
BENCHES += $(BENCH_API)
endif

# bench/manifest: `lockstep fp -r` (cli/fpfiles.c) against a plain read of the same files, in one run.
BENCH_MANIFEST := $(B)/bench/manifest/manifest
$(BENCH_MANIFEST): $(B)/bench/manifest/manifest.o $(LIBCLI) $(LIBCOMMON)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) -lpthread -lm
ALL_TARGETS += $(BENCH_MANIFEST)
BENCHES += $(BENCH_MANIFEST)

# bench/compare: the compare query on 10,000 steps x 8 runs (in `make bench`), and the calibration of the noise
# rule on lockstep-train (bench/compare/calibrate.sh, by hand: minutes; docs/compare.md has its figures).
ifneq ($(HARNESS_OBJS),)
BENCH_COMPARE := $(B)/bench/compare/compare
$(BENCH_COMPARE): $(B)/bench/compare/compare.o $(HARNESS_OBJS) $(LIBCOMMON) | $(LOCKSTEPD)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(HARNESS_LIBS) -lm
ALL_TARGETS += $(BENCH_COMPARE)
BENCHES += $(BENCH_COMPARE)
endif
BENCH_CALIBRATE := $(B)/bench/compare/calibrate
$(BENCH_CALIBRATE): $(B)/bench/compare/calibrate.o $(B)/server/rules/noise.o $(LIBCLI) $(LIBCOMMON)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) -lm
ALL_TARGETS += $(BENCH_CALIBRATE)
