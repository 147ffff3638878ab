# spank.mk - spank_lockstep.so, the SPANK plugin (hardened, exports only SPANK symbols), and its test tiers.
#
# The plugin is loaded into srun, sbatch, slurmd and slurmstepd, so it is built without sanitizers even
# under SAN=1 (its objects go to $(B)/spank/so/); the unit tests link the ordinary (sanitized) objects.
SPANK_SRCS := $(wildcard spank/*.c)
SPANK_OBJS := $(SPANK_SRCS:%.c=$(B)/%.o)
SPANK_LIB_OBJS := $(filter-out $(B)/spank/spank_lockstep.o,$(SPANK_OBJS))
SPANK_SO := $(B)/lib/spank_lockstep.so
SPANK_SO_OBJS := $(SPANK_SRCS:spank/%.c=$(B)/spank/so/%.o) $(B)/spank/so/common/tracespec.o $(B)/spank/so/common/dtype.o $(B)/spank/so/common/fsutil.o \
  $(B)/spank/so/common/crypto/token.o $(B)/spank/so/common/wire.o $(B)/spank/so/common/jsonw.o \
  $(B)/spank/so/common/site.o $(B)/spank/so/common/hostlist.o $(B)/spank/so/common/text.o \
  $(B)/spank/so/common/words.o $(B)/spank/so/common/servers.o
SPANK_LIBS = $(call pc_libs,libcurl jansson libcrypto)
SPANK_AGENT_DEFAULT ?= $(PREFIX)/lib/liblockstep.so

EXTRA_CFLAGS_spank = $(HARDEN) -Wno-format-truncation $(call pc_cflags,libcurl jansson libcrypto) \
  -DLSP_DEFAULT_AGENT='"$(SPANK_AGENT_DEFAULT)"'

SPANK_SO_CFLAGS = -std=gnu11 $(CFLAGS) $(WARN) -Wno-format-truncation $(HARDEN) -fPIC -fvisibility=hidden -I. -D_GNU_SOURCE -MMD -MP \
  $(call pc_cflags,libcurl jansson libcrypto) -DLSP_DEFAULT_AGENT='"$(SPANK_AGENT_DEFAULT)"'

$(B)/spank/so/%.o: spank/%.c
	@mkdir -p $(@D)
	$(CC) $(SPANK_SO_CFLAGS) -c $< -o $@

$(B)/spank/so/common/%.o: common/%.c
	@mkdir -p $(@D)
	$(CC) $(SPANK_SO_CFLAGS) -Wno-comment -c $< -o $@

$(SPANK_SO): $(SPANK_SO_OBJS) spank/spank_lockstep.map
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $(SPANK_SO_OBJS) $(LDFLAGS) $(HARDEN_LD) -Wl,--version-script=spank/spank_lockstep.map \
	  -Wl,--no-undefined-version $(SPANK_LIBS)

# Unit tests: the plugin's logic and its callbacks against a fake SPANK API.
# (token.o from the plugin's own rule: common/crypto/token.c needs -Wno-comment today.)
TEST_OBJS_test_spank_logic = $(SPANK_LIB_OBJS) $(B)/spank/so/common/crypto/token.o
TEST_LIBS_test_spank_logic = $(SPANK_LIBS)
TEST_OBJS_test_spank_callbacks = $(SPANK_OBJS) $(B)/spank/so/common/crypto/token.o
TEST_LIBS_test_spank_callbacks = $(SPANK_LIBS)

ALL_TARGETS += $(SPANK_SO)
INSTALL_LIB += $(SPANK_SO)
TEST_TIERS += tests/slurm/run.sh

# The Slurm tier's MPI program, linked like a user's program against liblockstep.so.
ifneq ($(shell command -v mpicc 2>/dev/null),)
SLURM_MPI_TWIN := $(B)/tests/slurm/mpi_twin
$(SLURM_MPI_TWIN): tests/slurm/mpi_twin.c $(LIBLOCKSTEP_SO)
	@mkdir -p $(@D)
	mpicc $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../../lib' -llockstep -lm
ALL_TARGETS += $(SLURM_MPI_TWIN)
endif
