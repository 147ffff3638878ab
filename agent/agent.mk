# agent.mk - liblockstep.so/.a (API, trace files, streaming, spool, manifest), liblockstep_mpi.so (PMPI
# wrappers), the agent's test tier and benchmark, and `lockstep replay`'s link needs.
AGENT_SRCS := $(wildcard agent/*.c)
AGENT_OBJS := $(AGENT_SRCS:%.c=$(B)/%.o)
LIBLOCKSTEP_SO := $(B)/lib/liblockstep.so
LIBLOCKSTEP_A := $(B)/lib/liblockstep.a
# libcurl is loaded with dlopen when a process first streams, so nothing here links it.
AGENT_LIBS := -lpthread -ldl
# Truncating long ids into fixed fields is intended in the agent; xxhash.h is used header-only.
EXTRA_CFLAGS_agent = -Wno-format-truncation $(call pc_cflags,libcurl libxxhash)

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

# liblockstep_mpi.so: PMPI wrappers, built against Open MPI's mpi.h. It does not link libmpi (the PMPI_*
# entry points are found with dlsym at first use), so preloading it into a program without MPI is harmless;
# it needs liblockstep.so, found beside it.
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
ifneq ($(MPI_CFLAGS),)
LIBLOCKSTEP_MPI_SO := $(B)/lib/liblockstep_mpi.so
$(B)/agent/mpi/%.o: agent/mpi/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Wno-format-truncation $(MPI_CFLAGS) -c $< -o $@

# Its Fortran entry points (fortran.c) call its own C wrappers: -Bsymbolic-functions binds those calls here even
# when the library is linked rather than preloaded.
# comm.c keys each communicator (common/consensus.c's cons_key, over record.c's rec_comm_id).
LIBLOCKSTEP_MPI_OBJS := $(B)/agent/mpi/pmpi.o $(B)/agent/mpi/nbc.o $(B)/agent/mpi/fortran.o $(B)/agent/mpi/comm.o $(B)/common/lsfp1.o \
  $(B)/common/consensus.o $(B)/common/record.o $(B)/common/recmatch.o $(B)/common/crc32c.o
$(LIBLOCKSTEP_MPI_SO): $(LIBLOCKSTEP_MPI_OBJS) $(LIBLOCKSTEP_SO) agent/mpi/liblockstep_mpi.map
	$(CC) -shared -o $@ $(LIBLOCKSTEP_MPI_OBJS) $(ALL_LDFLAGS) $(HARDEN_LD) -Wl,-Bsymbolic-functions \
	  -Wl,--version-script=agent/mpi/liblockstep_mpi.map -Wl,-soname,liblockstep_mpi.so \
	  -L$(B)/lib -Wl,-rpath,'$$ORIGIN' -llockstep -ldl

ALL_TARGETS += $(LIBLOCKSTEP_MPI_SO)

# A fault shim for the consensus checks (tests/agent/shim_corrupt.c): preloaded after liblockstep_mpi.so, it corrupts
# one rank's MPI_Allreduce output between Lockstep and MPI.
$(B)/tests/agent/shim_corrupt.so: tests/agent/shim_corrupt.c
	@mkdir -p $(@D)
	mpicc $(ALL_CFLAGS) -fPIC -shared -o $@ $< $(ALL_LDFLAGS) -ldl
ALL_TARGETS += $(B)/tests/agent/shim_corrupt.so
INSTALL_LIB += $(LIBLOCKSTEP_MPI_SO)
endif

# `lockstep replay` (cli/cmd_replay.c) uses the agent's spool, uplink and spool sender: the archive goes at the
# end of the link line.
$(B)/bin/lockstep: $(LIBLOCKSTEP_A)
$(B)/bin/lockstep: CLI_LIBS += $(LIBLOCKSTEP_A) -lpthread -ldl

# Test programs for the agent tier (built, not installed).
AGENT_TEST_SRCS := $(filter-out tests/agent/nccl_%.c tests/agent/shim_%.c tests/agent/cons_%.c,$(wildcard tests/agent/*.c))
AGENT_TEST_BINS := $(AGENT_TEST_SRCS:tests/agent/%.c=$(B)/tests/agent/%)
$(B)/tests/agent/mpi_%: tests/agent/mpi_%.c
	@mkdir -p $(@D)
	mpicc $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -lm
$(B)/tests/agent/%: tests/agent/%.c $(LIBLOCKSTEP_SO)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../../lib' -llockstep -lpthread -lm
ALL_TARGETS += $(AGENT_TEST_BINS)
# The consensus checks' reader of trace files (the record codec of liblockstep.a, which the .so does not export).
$(B)/tests/agent/cons_digests: tests/agent/cons_digests.c $(LIBLOCKSTEP_A)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) $(LIBLOCKSTEP_A) -lpthread -ldl -lm
ALL_TARGETS += $(B)/tests/agent/cons_digests
TEST_TIERS += tests/agent/run.sh

# tests/apps: unmodified MPI programs (no Lockstep calls) that the agent and Slurm tiers run under LD_PRELOAD:
# heat (C, a process grid, ends by reducing its timings) and solver (C++, over libsolver.so, a library shipped
# stripped whose timing report runs in a file-static helper). The library keeps default visibility: its
# methods must stay in the dynamic symbol table, as an installed library's do.
# (The C API only: Open MPI's C++ bindings do not build with -Werror.)
APPS_CXXFLAGS := -std=gnu++17 $(CFLAGS) -Wall -Wextra -Werror $(SANFLAGS) -DOMPI_SKIP_MPICXX=1
$(B)/tests/apps/heat: tests/apps/heat.c
	@mkdir -p $(@D)
	mpicc -std=gnu11 $(CFLAGS) $(WARN) $(SANFLAGS) -o $@ $< $(ALL_LDFLAGS) -lm
$(B)/tests/apps/libsolver.so: tests/apps/libsolver.cpp tests/apps/solver.h
	@mkdir -p $(@D)
	mpicxx $(APPS_CXXFLAGS) -fPIC -shared -o $@ $< $(ALL_LDFLAGS)
	strip --strip-unneeded $@
$(B)/tests/apps/solver: tests/apps/solver.cpp tests/apps/solver.h $(B)/tests/apps/libsolver.so
	mpicxx $(APPS_CXXFLAGS) -o $@ $< $(ALL_LDFLAGS) -L$(B)/tests/apps -lsolver -Wl,-rpath,'$$ORIGIN'
# blacs_solve (C over Debian's ScaLAPACK: a 1x1 BLACS grid, whose broadcasts run on a one-process communicator),
# built where libscalapack-openmpi-dev is installed.
SCALAPACK_SO := $(wildcard /usr/lib/x86_64-linux-gnu/libscalapack-openmpi.so /usr/lib/libscalapack-openmpi.so)
$(B)/tests/apps/blacs_solve: tests/apps/blacs_solve.c
	@mkdir -p $(@D)
	mpicc -std=gnu11 $(CFLAGS) $(WARN) $(SANFLAGS) -o $@ $< $(ALL_LDFLAGS) -lscalapack-openmpi -lm
ifneq ($(MPI_CFLAGS),)
ALL_TARGETS += $(B)/tests/apps/heat $(B)/tests/apps/libsolver.so $(B)/tests/apps/solver
ifneq ($(SCALAPACK_SO),)
ALL_TARGETS += $(B)/tests/apps/blacs_solve
endif
endif
# Fortran programs (mpifort): one per Open MPI binding (mpif.h, use mpi, use mpi_f08), and a mixed Fortran/C
# one. mpif.h declares no interfaces, so gfortran 10 and later refuse its untyped buffers (MPI_IN_PLACE an
# INTEGER, the data REAL) unless -fallow-argument-mismatch, which the codes that use mpif.h build with (its
# warnings, one per call, silenced). Each program's .mod files go in a folder of its own.
MPIFORT := $(shell command -v mpifort 2>/dev/null)
FORTRAN_APPS := $(patsubst tests/apps/%.f90,$(B)/tests/apps/%,$(wildcard tests/apps/fortran_*.f90)) $(B)/tests/apps/mixed
$(B)/tests/apps/fortran_mpifh: FORTRAN_FLAGS := -fallow-argument-mismatch -w
$(B)/tests/apps/fortran_%: tests/apps/fortran_%.f90
	@mkdir -p $(@D)/mod-$(@F)
	mpifort -g -O1 -Wall $(FORTRAN_FLAGS) -J $(@D)/mod-$(@F) -o $@ $<
$(B)/tests/apps/mixed: tests/apps/mixed.f90 tests/apps/mixed_energy.c
	@mkdir -p $(@D)/mod-$(@F)
	mpicc -std=gnu11 $(CFLAGS) $(WARN) -c -o $(@D)/mixed_energy.o tests/apps/mixed_energy.c
	mpifort -g -O1 -Wall -J $(@D)/mod-$(@F) -o $@ tests/apps/mixed.f90 $(@D)/mixed_energy.o
ifneq ($(MPIFORT),)
ALL_TARGETS += $(FORTRAN_APPS)
endif

# bench/agent: an allreduce-heavy MPI program with and without the agent, server up and down.
$(B)/bench/agent/allreduce: bench/agent/allreduce.c bench/agent/blocks.h
	@mkdir -p $(@D)
	mpicc $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -lm
$(B)/bench/agent/cg: bench/agent/cg.c bench/agent/blocks.h
	@mkdir -p $(@D)
	mpicc $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -lm
ALL_TARGETS += $(B)/bench/agent/allreduce $(B)/bench/agent/cg
BENCHES += bench/agent/run.sh

# liblockstep_nccl.so (CUDA=1 and nccl.h present): NCCL wrappers hashing device buffers with the kernels'
# LSFP-1 (kernels/lsfp1.cu, linked in) on the collective's stream. libnccl is found with dlsym(RTLD_NEXT).
ifeq ($(CUDA),1)
AGENT_CUDA_HOME := $(patsubst %/bin/nvcc,%,$(NVCC))
AGENT_NCCL_H := $(firstword $(wildcard $(AGENT_CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
ifneq ($(AGENT_NCCL_H),)
LIBLOCKSTEP_NCCL_SO := $(B)/lib/liblockstep_nccl.so
$(B)/agent/nccl/%.o: agent/nccl/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Wno-format-truncation -isystem $(AGENT_CUDA_HOME)/include \
	  -isystem $(dir $(AGENT_NCCL_H)) -c $< -o $@

$(LIBLOCKSTEP_NCCL_SO): $(B)/agent/nccl/nccl.o $(B)/kernels/lsfp1.cu.o $(LIBLOCKSTEP_SO) agent/nccl/liblockstep_nccl.map
	$(CC) -shared -o $@ $(B)/agent/nccl/nccl.o $(B)/kernels/lsfp1.cu.o $(ALL_LDFLAGS) $(HARDEN_LD) \
	  -Wl,--version-script=agent/nccl/liblockstep_nccl.map -Wl,-soname,liblockstep_nccl.so \
	  -L$(B)/lib -Wl,-rpath,'$$ORIGIN' -llockstep $(KCUDA_LIBS) -ldl

# The GPU check's program (tests/agent/gpu-check-nccl.sh runs it where a GPU is lent): plain NCCL, no Lockstep.
$(B)/tests/agent/nccl_allreduce: tests/agent/nccl_allreduce.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -isystem $(AGENT_CUDA_HOME)/include -isystem $(dir $(AGENT_NCCL_H)) -o $@ $< $(ALL_LDFLAGS) \
	  -L$(AGENT_CUDA_HOME)/lib64 -Wl,-rpath,$(AGENT_CUDA_HOME)/lib64 -lnccl -lcudart

ALL_TARGETS += $(LIBLOCKSTEP_NCCL_SO) $(B)/tests/agent/nccl_allreduce
INSTALL_LIB += $(LIBLOCKSTEP_NCCL_SO)
endif
endif
