# web.mk - the dashboard. lockstepd serves web/ itself (its default web directory in the build tree,
# PREFIX/share/lockstep/web once installed); the build only vendors uPlot from npm into web/vendor/
# (git-ignored), so nothing is fetched at run time. Also the browser test tier and `make install` of the files.
WEB_NPM_STAMP := web/node_modules/.package-lock.json
WEB_VENDOR := web/vendor/uPlot.iife.min.js web/vendor/uPlot.min.css

# npm ci runs at build time only (deploy/install-deps.sh normally did it already).
$(WEB_NPM_STAMP): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

web/vendor/%: $(WEB_NPM_STAMP)
	@mkdir -p $(@D)
	cp web/node_modules/uplot/dist/$* $@

.PHONY: web install-web
web: $(WEB_VENDOR)

ALL_TARGETS += $(WEB_VENDOR)

WEB_SHARE := $(DESTDIR)$(PREFIX)/share/lockstep/web
install: install-web
install-web: $(WEB_VENDOR)
	install -d $(WEB_SHARE)/css $(WEB_SHARE)/js/pages $(WEB_SHARE)/vendor
	install -m 644 web/index.html $(WEB_SHARE)/
	install -m 644 web/css/*.css $(WEB_SHARE)/css/
	install -m 644 web/js/*.js $(WEB_SHARE)/js/
	install -m 644 web/js/pages/*.js $(WEB_SHARE)/js/pages/
	install -m 644 $(WEB_VENDOR) $(WEB_SHARE)/vendor/

# The browser tier drives the dashboard against a real lockstepd, so it comes with the server part.
ifneq ($(wildcard server/server.mk),)
TEST_TIERS += tests/browser/run.sh
endif
