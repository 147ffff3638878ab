# bench.mk - benchmarks; each binary or script prints one JSON line of figures.
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(B)/bench/%)
EXTRA_CFLAGS_bench = $(call pc_cflags,libxxhash)

$(B)/bench/%: $(B)/bench/%.o $(LIBLOCKSTEP_A)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(call pc_libs,libxxhash) -lpthread -lm

ALL_TARGETS += $(BENCH_BINS)
BENCHES += $(BENCH_BINS)

bench-run: $(BENCHES)
	@for b in $(BENCHES); do $$b || exit 1; done
