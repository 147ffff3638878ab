"""__main__.py - `python3 -m lockstep`: manifest-diff of two runs, and where the library was found."""

import sys

from . import _lib, manifest


def main(argv):
    """Dispatch the subcommand; returns the exit status."""
    if len(argv) >= 1 and argv[0] == "manifest-diff":
        return manifest.main_diff(argv[1:])
    if len(argv) == 1 and argv[0] == "where":
        try:
            _lib.load()
        except _lib.LibraryNotFound as e:
            sys.stderr.write("%s\n" % e)
            return 2
        how, path = _lib.where()
        print("%s %s" % (how, path or "(in the process)"))
        return 0
    sys.stderr.write("usage: python3 -m lockstep manifest-diff [--json] RUN_A RUN_B\n"
                     "       python3 -m lockstep where      (which liblockstep is used)\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
