# deb.mk - `make deb`: Debian packages of the server, the node side and the client (debian/, docs/install.md),
# built by deploy/deb/build.sh from a copy of the tree into build/deb/, and the deb tier that builds, checks and
# installs them into a temporary root.
.PHONY: deb
# Never sanitized (they are what sites install): under SAN=1 they are the same packages, in the same place.
deb: $(WEB_VENDOR)
	deploy/deb/build.sh -o build/deb -l

TEST_TIERS += tests/deb/run.sh
