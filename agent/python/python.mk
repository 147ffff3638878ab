# python.mk - the Python binding (agent/python: pure ctypes, nothing to compile) and its test tier.
#
#   make python-check     byte-compile the package with Debian's interpreter (part of `make`)
#   make python-install   pip install the package into $(PREFIX)/lib/python3.X/dist-packages (the C library
#                         comes from make install)
PY3 := /usr/bin/python3
PY_SRCS := $(wildcard agent/python/lockstep/*.py)
PY_STAMP := $(B)/python/compiled.stamp

# A syntax error in the package fails the build, not only the tier. Nothing is written
# into the source tree (the bytecode goes under $(B)).
$(PY_STAMP): $(PY_SRCS)
	@mkdir -p $(@D)
	PYTHONPYCACHEPREFIX=$(B)/python/pycache $(PY3) -m py_compile $(PY_SRCS)
	@touch $@

.PHONY: python-check python-install
python-check: $(PY_STAMP)

# pip builds in the folder it is given: build from a copy under $(B), not in the source tree.
# Debian marks its Python externally managed, so the package goes to PREFIX's dist-packages
# (/usr/local/lib/python3.X/dist-packages is on Debian's path) with --target.
PY_SITE = $(DESTDIR)$(PREFIX)/lib/python$(shell $(PY3) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages
python-install:
	rm -rf $(B)/python/src && mkdir -p $(B)/python/src
	cp -r agent/python/pyproject.toml agent/python/lockstep $(B)/python/src/
	$(PY3) -m pip install --no-build-isolation --no-deps --no-index --upgrade --target $(PY_SITE) $(B)/python/src

ALL_TARGETS += $(PY_STAMP)
TEST_TIERS += tests/python/run.sh
BENCHES += tests/python/bench-watch.sh
