"""run_tests.py - run the Python tier's unittest modules and print the tier's last line, "N passed, N failed".

usage: run_tests.py [MODULE...]   (default: test_binding test_torch test_blocks test_resume test_replicas)
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    names = argv or ["test_binding", "test_torch", "test_blocks", "test_resume", "test_replicas"]
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromName(n) for n in names)
    res = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    failed = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    # A skipped test did not pass; count it as failed so nothing passes by being left out.
    failed += len(res.skipped)
    print("%d passed, %d failed" % (res.testsRun - failed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
