#!/bin/sh
# version.sh - the one source of Lockstep's version: the release in VERSION, the commit it was built from, and the
# Debian package version made of both.
#
#   deploy/version.sh            0.1.0                   VERSION's first line (the release this tree is, or follows)
#   deploy/version.sh --commit   bbe593a1c2d4            the commit (12 hex digits), or "unknown"
#   deploy/version.sh --deb      0.1.0+git380.gbbe593a   the package version: VERSION alone at the tag vVERSION,
#                                                        else +git<commits since the root>.g<commit>, which sorts
#                                                        later along the history (dpkg --compare-versions)
#
# The commit comes from git when the tree is a checkout (its own, not one it happens to sit in); a copy without .git
# (`make deb` builds from one, as from a release tarball) carries it in a file COMMIT beside VERSION:
# "COMMIT COUNT TAGGED" as `deploy/version.sh --stamp` prints it. Neither: "unknown", and --deb is VERSION.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)

version=$(sed -n '1{s/[[:space:]]//g;p;}' "$root/VERSION" 2>/dev/null || true)
case $version in
'' | *[!0-9A-Za-z.~+-]*)
  echo "version.sh: no version in $root/VERSION (hint: one line such as 0.1.0)" >&2
  exit 1 ;;
esac

# stamp - "COMMIT COUNT TAGGED" of this tree, or nothing when it is not known.
stamp() {
  if [ -d "$root/.git" ] || [ -f "$root/.git" ]; then
    top=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null || true)
    if [ "$top" = "$root" ] && c=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null); then
      n=$(git -C "$root" rev-list --count HEAD)
      t=0
      [ "$(git -C "$root" rev-parse -q --verify "refs/tags/v$version^{commit}" 2>/dev/null || true)" = \
        "$(git -C "$root" rev-parse HEAD)" ] && t=1
      echo "$c $n $t"
      return
    fi
  fi
  [ -f "$root/COMMIT" ] && sed -n 1p "$root/COMMIT"
  return 0
}

case ${1:-} in
'') echo "$version" ;;
--commit)
  s=$(stamp)
  echo "${s%% *}" | grep -E '^[0-9a-f]{7,40}$' || echo unknown ;;
--deb)
  s=$(stamp)
  set -- $s
  if [ $# -eq 3 ] && [ "$3" = 0 ]; then
    echo "$version+git$2.g$(echo "$1" | cut -c1-7)"
  else
    echo "$version"
  fi ;;
--stamp) stamp ;;
*)
  echo "usage: deploy/version.sh [--commit | --deb | --stamp]" >&2
  exit 2 ;;
esac
