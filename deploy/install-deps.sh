#!/usr/bin/env bash
# install-deps.sh - install every Debian package Lockstep needs to build and test (idempotent).
#
# Does nothing when everything is present. Run as root (or with sudo available).
# Usage: deploy/install-deps.sh [--check]   (--check: exit 1 if something is missing, install nothing)
set -euo pipefail

# Build and unit-test tier.
PKGS_BUILD=(
  build-essential pkg-config python3 gdb  # gdb: the Slurm tier prints the stacks of a task that dumped core
  python3-torch python3-numpy python3-pip python3-setuptools python3-wheel  # the Python binding tier (agent/python)
  libcmocka-dev libxxhash-dev
  libmicrohttpd-dev libjansson-dev libpq-dev libcurl4-openssl-dev libssl-dev curl
  clang-14 libclang-rt-14-dev  # lockstepd's fuzz tier (libFuzzer)
  clang-format-14  # make format, make format-check (.ci/run)
  dpkg-dev debhelper dh-python help2man lintian  # make deb and the deb tier (deploy/deb/build.sh)
)
# Integration tiers: real PostgreSQL, Slurm with munge, Open MPI.
PKGS_SERVICES=(
  postgresql-15 postgresql-client-15
  slurmctld slurmd slurm-client munge libslurm-dev openssl
  slurmdbd mariadb-server-core mariadb-client-core  # accounting in the local Slurm (deploy/slurm/up.sh -A): sacct
  libopenmpi-dev openmpi-bin
  libscalapack-openmpi-dev  # tests/apps/blacs_solve: ScaLAPACK on a 1x1 BLACS grid (the Slurm tier)
  gfortran  # mpifort: the Fortran programs of tests/apps (agent and Slurm tiers)
  quantum-espresso quantum-espresso-data  # pw.x and its pseudopotentials: a real Fortran MPI code (Slurm tier)
  prometheus prometheus-alertmanager  # the boards' queries and the example route, run for real (test_observe)
)

# Web dashboard: Node/npm for its libraries and browser tests, Chromium to run them headless.
# (npm comes with NodeSource's nodejs; Debian's own npm package is added only where npm is absent.)
PKGS_WEB=(nodejs chromium fonts-dejavu-core)
command -v npm >/dev/null 2>&1 || PKGS_WEB+=(npm)

PKGS=("${PKGS_BUILD[@]}" "${PKGS_SERVICES[@]}" "${PKGS_WEB[@]}")

# web_npm - install the dashboard's npm packages (web/package-lock.json: uPlot, and for the tests playwright-core and
# the pinned eslint the layout tier runs) unless web/node_modules is current.
web_npm() {
  local web; web="$(cd "$(dirname "$0")/.." && pwd)/web"
  [ -f "$web/package-lock.json" ] || return 0
  if [ -f "$web/node_modules/.package-lock.json" ] && [ "$web/node_modules/.package-lock.json" -nt "$web/package-lock.json" ]; then
    return 0
  fi
  echo "install-deps: npm ci in web/" >&2
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error) >&2
}

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing packages: ${missing[*]}" >&2
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  web_npm
  exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
web_npm
