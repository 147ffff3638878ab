# kernels.mk - lockstep-train (CPU path always; CUDA + NCCL path with CUDA=1), the LSFP-1 and
# reduction kernels, liblockstep_cuda.so (the agent with ls_tensor_device), and their benchmarks.
MPI_CFLAGS := $(call pc_cflags,ompi-c)
MPI_LIBS := $(call pc_libs,ompi-c)
EXTRA_CFLAGS_kernels = $(patsubst -I%,-isystem %,$(MPI_CFLAGS)) $(call pc_cflags,jansson) $(KERNELS_CUDA_CFLAGS)

# Host code shared by both trainers (no MPI in these).
KTRAIN_COMMON_OBJS := $(B)/kernels/mlp.o $(B)/kernels/train_opts.o $(B)/kernels/ckpt.o
KTRAIN_CPU_OBJS := $(B)/kernels/train_cpu.o $(B)/kernels/reduce_mpi.o $(KTRAIN_COMMON_OBJS)
LOCKSTEP_TRAIN := $(B)/bin/lockstep-train
LIBKTRAIN := $(B)/libktrain.a

# lockstep-train links the shared agent, as a user's program would.
$(LOCKSTEP_TRAIN): $(KTRAIN_CPU_OBJS) $(LIBCOMMON) $(LIBLOCKSTEP_SO)
	@mkdir -p $(@D)
	$(CC) -o $@ $(KTRAIN_CPU_OBJS) $(LIBCOMMON) $(ALL_LDFLAGS) $(HARDEN_LD) -L$(B)/lib \
	  -Wl,-rpath,'$$ORIGIN/../lib' -llockstep $(MPI_LIBS) -lm

# The model, options, checkpoint and test-vector code, for the unit tests and GPU checks.
$(LIBKTRAIN): $(KTRAIN_COMMON_OBJS) $(B)/kernels/vectors.o
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

TEST_OBJS_test_ktrain := $(LIBKTRAIN)
TEST_OBJS_test_lsfp1_dev := $(LIBKTRAIN)

ALL_TARGETS += $(LOCKSTEP_TRAIN) $(LIBKTRAIN)
INSTALL_BIN += $(LOCKSTEP_TRAIN)
TEST_TIERS += tests/kernels/run.sh
