#!/usr/bin/env bash
# gpu-carry.sh - take the GPU checks to a lent GPU machine whose image is not this one (no Open MPI, Jansson or
# libcurl there; its own CUDA driver, runtime and a pip NCCL).
#   kernels/gpu-carry.sh pack [BUILD_DIR]   here: build the CUDA targets and fill .gpu/ (git-ignored, ~30 MiB):
#                                           .gpu/build (the outputs gpu-check.sh runs, marked PREBUILT),
#                                           .gpu/lib (every shared library they and Open MPI need, but the C
#                                           library, the CUDA driver, runtime and NCCL), .gpu/root (Open MPI's and
#                                           PMIx's plugins, help files and launcher, at their paths under /)
#   kernels/gpu-carry.sh run [COMMAND...]   there (device tool: carry [".gpu"]): supply what the machine lacks,
#                                           print what it has, run COMMAND or kernels/gpu-check.sh .gpu/build; the
#                                           logs and JSON lines land in $OUT (GPU_CARRY_SUPPLY=all supplies every
#                                           carried library, to try the carry on a machine that has them)
# Nothing already on the machine is replaced: a library is put on LD_LIBRARY_PATH only when ldconfig knows no
# library of that name, Open MPI's tree is copied under / only where the machine has none.
set -u
cd "$(dirname "$0")/.."
G=.gpu
ARCH_LIB=/usr/lib/x86_64-linux-gnu
OMPI_DIRS="$ARCH_LIB/openmpi $ARCH_LIB/pmix2 /usr/share/openmpi /etc/openmpi"
TARGETS="kernels/gpu_check bin/lockstep-train-cuda bin/lockstep-train bin/lockstep bench/kernels/gpu_bench
  lib/liblockstep_nccl.so tests/agent/nccl_allreduce tests/agent/cons_digests lib/liblockstep_cuda.so lib/liblockstep.so
  tests/kernels/tensor_device_test"
# The machine's own: the C library, the C++ runtime, the CUDA driver and runtime, NCCL.
OWN='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s|libcuda|libnvidia|libcudart|libnccl)[.-]'

pack() {
  local b=${1:-build} t f
  make -j"$(nproc)" CUDA=1 $(for t in $TARGETS; do echo "$b/$t"; done) >/dev/null || return 1
  rm -rf "$G" && mkdir -p "$G/build" "$G/lib" "$G/root"
  for t in $TARGETS; do mkdir -p "$G/build/$(dirname "$t")" && cp -p "$b/$t" "$G/build/$t" || return 1; done
  echo "built on $(hostname) from $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes')" \
    >"$G/build/PREBUILT"
  for d in $OMPI_DIRS; do mkdir -p "$G/root$(dirname "$d")" && cp -a "$d" "$G/root$d" || return 1; done
  # headers, archives and the libraries .gpu/lib holds already stay behind
  find "$G/root" \( -name include -o -name '*.a' -o -name 'lib*.so*' \) -prune -exec rm -rf {} + || return 1
  mkdir -p "$G/root/usr/bin"
  cp -p /usr/bin/orterun /usr/bin/orted "$G/root/usr/bin/" && ln -s orterun "$G/root/usr/bin/mpirun"
  # every library the outputs and Open MPI's plugins load, by the name the loader asks for
  { for t in $TARGETS; do echo "$b/$t"; done; find "$ARCH_LIB/openmpi" "$ARCH_LIB/pmix2" -name '*.so*'; } |
    while read -r f; do ldd "$f" 2>/dev/null; done | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
    while read -r name path; do
      [[ $name =~ $OWN ]] || [[ $path == */build/* ]] || cp -L "$path" "$G/lib/$name"
    done
  du -sh "$G" | awk '{ print "packed " $1 " in .gpu: " }'
  ls "$G/lib" | tr '\n' ' '; echo
}

# The directory holding NAME as one of python's nvidia-* packages installs it, if any.
pip_lib_dir() {
  python3 - "$1" 2>/dev/null <<'PY'
import glob, os, sys
try:
    import nvidia
    for root in nvidia.__path__:
        for p in glob.glob(os.path.join(root, "*", "lib", sys.argv[1])):
            print(os.path.dirname(p)); break
except Exception:
    pass
PY
}

run() {
  local out=${OUT:-/tmp/ls-gpu-out} f name d extra="" l
  mkdir -p "$out"
  exec > >(tee "$out/run.log") 2>&1
  echo "== machine: $(uname -r), $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), glibc $(ldd --version | head -1 | awk '{print $NF}')"
  echo "== $(cat "$G/build/PREBUILT")"
  [ -x "$G/build/bin/lockstep" ] || { echo "no .gpu/build: run kernels/gpu-carry.sh pack here and carry .gpu"; return 1; }
  mkdir -p /tmp/ls-gpu/lib
  for f in "$G"/lib/*; do
    name=$(basename "$f")
    if [ "${GPU_CARRY_SUPPLY:-}" = all ] || ! ldconfig -p | grep -q "^[[:space:]]*$name "; then
      cp "$f" /tmp/ls-gpu/lib/; extra="$extra $name"
    fi
  done
  echo "== supplied:${extra:- nothing}"
  if [ -n "$(ls -A "$ARCH_LIB/openmpi" 2>/dev/null)" ]; then
    echo "== Open MPI: the machine's own"
  else # Open MPI finds its plugins and help files where it was built to, its launcher comes first on PATH
    for d in $OMPI_DIRS; do mkdir -p "$d" && cp -a "$G/root$d/." "$d/" || return 1; done
    export PATH=$PWD/$G/root/usr/bin:$PATH
  fi
  for name in libcudart.so.13 libnccl.so.2; do
    if [ -e "/usr/local/cuda/lib64/$name" ] || ldconfig -p | grep -q "^[[:space:]]*$name "; then continue; fi
    d=$(pip_lib_dir "$name")
    if [ -n "$d" ]; then extra="$extra $d"; echo "== $name from $d"; l="${l:+$l:}$d"; else echo "== $name: none found"; fi
  done
  export LD_LIBRARY_PATH=/tmp/ls-gpu/lib${l:+:$l}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export OMPI_MCA_plm=isolated OMPI_MCA_mca_base_component_show_load_errors=0
  echo "== mpirun: $(command -v mpirun) ($(mpirun --version 2>&1 | head -1))"
  echo "== python3: $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -1)"
  for f in "$G"/build/bin/* "$G"/build/lib/*.so "$G"/build/kernels/gpu_check; do
    ldd "$f" | grep -q 'not found' && echo "== MISSING for $f: $(ldd "$f" | grep 'not found' | tr -s ' \t\n' ' ')"
  done
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  if [ $# -gt 0 ]; then "$@"; else kernels/gpu-check.sh "$G/build"; fi
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: kernels/gpu-carry.sh pack [BUILD_DIR] | run [COMMAND...]" >&2; exit 2 ;;
esac
