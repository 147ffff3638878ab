# kernels.mk - lockstep-train (CPU path always; CUDA + NCCL path with CUDA=1), the LSFP-1 and
# reduction kernels, liblockstep_cuda.so (the agent with ls_tensor_device), and their benchmarks.
KMPI_CFLAGS := $(call pc_cflags,ompi-c)
KMPI_LIBS := $(call pc_libs,ompi-c)
EXTRA_CFLAGS_kernels = $(patsubst -I%,-isystem %,$(KMPI_CFLAGS)) $(call pc_cflags,jansson) $(KERNELS_CUDA_CFLAGS)

# Host code shared by both trainers (no MPI in these).
KTRAIN_COMMON_OBJS := $(B)/kernels/mlp.o $(B)/kernels/train_opts.o $(B)/kernels/ckpt.o
KTRAIN_CPU_OBJS := $(B)/kernels/train_cpu.o $(B)/kernels/reduce_mpi.o $(KTRAIN_COMMON_OBJS)
LOCKSTEP_TRAIN := $(B)/bin/lockstep-train
LIBKTRAIN := $(B)/libktrain.a

# lockstep-train links the shared agent, as a user's program would.
$(LOCKSTEP_TRAIN): $(KTRAIN_CPU_OBJS) $(LIBCOMMON) $(LIBLOCKSTEP_SO)
	@mkdir -p $(@D)
	$(CC) -o $@ $(KTRAIN_CPU_OBJS) $(LIBCOMMON) $(ALL_LDFLAGS) $(HARDEN_LD) -L$(B)/lib \
	  -Wl,-rpath,'$$ORIGIN/../lib' -llockstep $(KMPI_LIBS) -lm

# The model, options, checkpoint and test-vector code, for the unit tests and GPU checks.
$(LIBKTRAIN): $(KTRAIN_COMMON_OBJS) $(B)/kernels/vectors.o
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

TEST_OBJS_test_ktrain := $(LIBKTRAIN)
TEST_OBJS_test_lsfp1_dev := $(LIBKTRAIN)
TEST_OBJS_test_lsfp1 := $(LIBKTRAIN)

ALL_TARGETS += $(LOCKSTEP_TRAIN) $(LIBKTRAIN)
INSTALL_BIN += $(LOCKSTEP_TRAIN)
TEST_TIERS += tests/kernels/run.sh

# ---- CUDA parts (CUDA=1 where nvcc exists): compiled here, run where a GPU is lent.
ifeq ($(CUDA),1)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib) $(CUDA_HOME)/lib64)
KCUDA_ARCH ?= --generate-code arch=compute_90,code=[sm_90,compute_90]
KCUDA_NVFLAGS = -std=c++17 -O3 -I. -isystem $(CUDA_HOME)/include $(KCUDA_ARCH) -Werror all-warnings \
  -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror -MMD -MP
KERNELS_CUDA_CFLAGS = -isystem $(CUDA_HOME)/include -DLOCKSTEP_CUDA=1
KCUDA_LIBS = -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcudart -lstdc++
KCUDA_HAVE_NCCL := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))

$(B)/kernels/%.cu.o: kernels/%.cu
	@mkdir -p $(@D)
	$(NVCC) $(KCUDA_NVFLAGS) -c $< -o $@

# The kernels, for the trainer, the checks and the benchmarks.
LIBKCUDA := $(B)/libkcuda.a
$(LIBKCUDA): $(B)/kernels/lsfp1.cu.o $(B)/kernels/reduce.cu.o
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# liblockstep_cuda.so: ls_tensor_device, beside liblockstep.so (which stays free of CUDA, so that it
# loads on nodes without a GPU). Programs link -llockstep_cuda -llockstep.
LIBLOCKSTEP_CUDA_SO := $(B)/lib/liblockstep_cuda.so
$(LIBLOCKSTEP_CUDA_SO): $(B)/kernels/tensor_device.o $(B)/kernels/lsfp1.cu.o $(LIBLOCKSTEP_SO) kernels/liblockstep_cuda.map
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $(B)/kernels/tensor_device.o $(B)/kernels/lsfp1.cu.o $(ALL_LDFLAGS) $(HARDEN_LD) \
	  -Wl,--version-script=kernels/liblockstep_cuda.map -Wl,-soname,liblockstep_cuda.so \
	  -L$(B)/lib -Wl,-rpath,'$$ORIGIN' -llockstep $(KCUDA_LIBS)

# The GPU checks gpu-check.sh runs: kernels against the CPU, twins of the reductions.
KGPU_CHECK := $(B)/kernels/gpu_check
$(KGPU_CHECK): $(B)/kernels/gpu_check.o $(LIBKCUDA) $(LIBKTRAIN) $(LIBLOCKSTEP_CUDA_SO) $(LIBCOMMON)
	$(CC) -o $@ $(B)/kernels/gpu_check.o $(LIBKCUDA) $(LIBKTRAIN) $(LIBCOMMON) $(ALL_LDFLAGS) -L$(B)/lib \
	  -Wl,-rpath,'$$ORIGIN/../lib' -llockstep_cuda -llockstep $(call pc_libs,jansson) $(KCUDA_LIBS) -lm

# ls_tensor_device's host logic, run by the kernels tier with or without a GPU.
KTD_TEST := $(B)/tests/kernels/tensor_device_test
$(KTD_TEST): tests/kernels/tensor_device_test.c $(LIBLOCKSTEP_CUDA_SO)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -isystem $(CUDA_HOME)/include -o $@ $< $(ALL_LDFLAGS) -L$(B)/lib \
	  -Wl,-rpath,'$$ORIGIN/../../lib' -llockstep_cuda -llockstep $(KCUDA_LIBS)

ALL_TARGETS += $(LIBKCUDA) $(LIBLOCKSTEP_CUDA_SO) $(KGPU_CHECK) $(KTD_TEST)
INSTALL_LIB += $(LIBLOCKSTEP_CUDA_SO)

ifneq ($(KCUDA_HAVE_NCCL),)
# lockstep-train-cuda: the same trainer on CUDA + NCCL, one GPU per rank.
LOCKSTEP_TRAIN_CUDA := $(B)/bin/lockstep-train-cuda
KTRAIN_CUDA_OBJS := $(B)/kernels/train_cuda.cu.o $(KTRAIN_COMMON_OBJS)
$(B)/kernels/train_cuda.cu.o: KCUDA_NVFLAGS += $(patsubst -I%,-isystem %,$(KMPI_CFLAGS))
$(LOCKSTEP_TRAIN_CUDA): $(KTRAIN_CUDA_OBJS) $(LIBKCUDA) $(LIBCOMMON) $(LIBLOCKSTEP_CUDA_SO)
	@mkdir -p $(@D)
	$(CC) -o $@ $(KTRAIN_CUDA_OBJS) $(LIBKCUDA) $(LIBCOMMON) $(ALL_LDFLAGS) $(HARDEN_LD) -L$(B)/lib \
	  -Wl,-rpath,'$$ORIGIN/../lib' -llockstep_cuda -llockstep $(KMPI_LIBS) -lnccl $(KCUDA_LIBS) -lm
ALL_TARGETS += $(LOCKSTEP_TRAIN_CUDA)
INSTALL_BIN += $(LOCKSTEP_TRAIN_CUDA)
endif
endif

# ---- benchmarks (sources in bench/kernels/): bench/kernels/run.sh prints the JSON lines.
BENCHES += bench/kernels/run.sh
ifeq ($(CUDA),1)
$(B)/bench/kernels/gpu_bench: $(B)/bench/kernels/gpu_bench.o $(LIBKCUDA) $(LIBCOMMON)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(KCUDA_LIBS) -lm
$(B)/bench/kernels/gpu_bench.o: EXTRA_CFLAGS_bench += -isystem $(CUDA_HOME)/include
ALL_TARGETS += $(B)/bench/kernels/gpu_bench
endif
