# deb.mk - `make deb`: Debian packages of the server, the node side and the client (debian/, docs/install.md),
# built by deploy/deb/build.sh from a copy of the tree into build/deb/, and the deb tier that builds them, checks
# them and installs them into a throwaway overlay of the machine (tests/deb/run.sh).
.PHONY: deb
# Never sanitized (they are what sites install): under SAN=1 they are the same packages, in the same place.
deb: $(WEB_VENDOR)
	deploy/deb/build.sh -o build/deb -l

TEST_TIERS += tests/deb/run.sh
