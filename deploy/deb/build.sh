#!/usr/bin/env bash
# build.sh - build Lockstep's Debian packages with dpkg-buildpackage from a copy of the tree (`make deb`).
#
# usage: deploy/deb/build.sh [-o OUT_DIR] [-j JOBS] [-l]
#   -o  where the .deb files (and the .changes, the .buildinfo and build.log) go, replacing an earlier build's;
#       default build/deb
#   -j  parallel jobs of the build; default nproc
#   -l  run lintian on the result: its tags print (info tags too), errors and warnings fail
#
# The copy is the tree as it is now (git's tracked and untracked files that are not ignored, edits included) plus
# the dashboard's vendored libraries (web/vendor, made by `make web`), in a temporary directory that is removed
# afterwards: the normal build under build/ is never touched, nor is the source tree. debian/changelog is written
# into the copy from deploy/version.sh, which stays the one source of the version.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$src/build/deb
jobs=$(nproc)
lint=0
while getopts "o:j:l" o; do
  case $o in
  o) out=$OPTARG ;;
  j) jobs=$OPTARG ;;
  l) lint=1 ;;
  *) sed -n 4,8p "$0" >&2; exit 2 ;;
  esac
done

for t in dpkg-buildpackage dh dh_python3 help2man; do
  command -v "$t" >/dev/null || { echo "build.sh: $t not found (hint: deploy/install-deps.sh installs the Debian build tools)" >&2; exit 1; }
done
[ "$lint" = 0 ] || command -v lintian >/dev/null || { echo "build.sh: lintian not found (hint: deploy/install-deps.sh)" >&2; exit 1; }
for f in web/vendor/uPlot.iife.min.js web/vendor/uPlot.min.css; do
  [ -f "$src/$f" ] || { echo "build.sh: $f is missing (hint: make web, or make deb)" >&2; exit 1; }
done

version=$("$src/deploy/version.sh" --deb)
stamp=$("$src/deploy/version.sh" --stamp)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-deb-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/lockstep-$version

# 1. the copy
mkdir -p "$tree"
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1 && [ "$(git -C "$src" rev-parse --show-toplevel)" = "$src" ]; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) >"$tmp/files"
else # a release tarball: everything but the build outputs
  (cd "$src" && find . -path ./build -prune -o -path ./web/node_modules -prune -o ! -type d -print0) >"$tmp/files"
fi
(cd "$src" && tar --null -T "$tmp/files" -cf - web/vendor) | tar -xf - -C "$tree"
[ -n "$stamp" ] && echo "$stamp" >"$tree/COMMIT"
# The vendored files are taken as they are: npm's stamp older than them, so that make runs no npm in the copy.
mkdir -p "$tree/web/node_modules"
touch "$tree/web/node_modules/.package-lock.json"
touch "$tree"/web/vendor/*

# 2. the changelog: one entry for this version
date=$(date -R)
[ -n "${SOURCE_DATE_EPOCH:-}" ] && date=$(date -R -d "@$SOURCE_DATE_EPOCH")
maint=$(sed -n 's/^Maintainer: //p' "$tree/debian/control")
cat >"$tree/debian/changelog" <<CL
lockstep ($version) unstable; urgency=medium

  * Built from $(if [ -n "$stamp" ]; then echo "commit ${stamp%% *}"; else echo "a tree without its commit"; fi) by make deb.

 -- $maint  $date
CL

# 3. the packages, into the temporary directory (dpkg-buildpackage writes beside the tree), then out
log=$tmp/build.log
echo "build.sh: building lockstep $version in $tree" >&2
if ! (cd "$tree" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -b -uc -us) >"$log" 2>&1; then
  tail -60 "$log" >&2
  echo "build.sh: dpkg-buildpackage failed (the lines above end its log)" >&2
  exit 1
fi
# OUT_DIR holds the packages of the latest build only (so that `apt install ./OUT/lockstepd_*.deb` picks one).
mkdir -p "$out"
rm -f "$out"/lockstep_*.changes "$out"/lockstep_*.buildinfo "$out"/build.log
for p in lockstepd lockstep-node lockstep python3-lockstep liblockstep-dev; do
  rm -f "$out/${p}"_*.deb "$out/${p}"-dbgsym_*.deb
done
cp "$log" "$out/build.log"
changes=lockstep_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).changes
for f in $(sed -n '/^Files:/,/^[^ ]/s/^ [0-9a-f]* [0-9]* [^ ]* [^ ]* //p' "$tmp/$changes") "$changes"; do
  cp "$tmp/$f" "$out/"
done
echo "build.sh: packages in $out:" >&2
sed -n '/^Files:/,/^[^ ]/s/^ [0-9a-f]* [0-9]* [^ ]* [^ ]* /  /p' "$tmp/$changes" >&2

# 4. lintian, on the packages as they are in OUT_DIR
if [ "$lint" = 1 ]; then
  echo "build.sh: lintian" >&2
  lintian --fail-on error,warning --display-info "$out/$changes"
fi
