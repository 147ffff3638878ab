# web.mk - the dashboard: web/ assets plus uPlot (from npm, vendored at build time) assembled into
# $(B)/web, the directory lockstepd serves with --web-dir; and the browser test tier.
WEB_SRCS := web/index.html $(wildcard web/css/*.css web/js/*.js web/js/pages/*.js)
WEB_OUT := $(WEB_SRCS:web/%=$(B)/web/%)
WEB_NPM_STAMP := web/node_modules/.package-lock.json
WEB_VENDOR := $(B)/web/vendor/uPlot.iife.min.js $(B)/web/vendor/uPlot.min.css
WEB_DIR := $(B)/web

# npm ci runs at build time only (deploy/install-deps.sh normally did it already); nothing is fetched at run time.
$(WEB_NPM_STAMP): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(B)/web/vendor/%: $(WEB_NPM_STAMP)
	@mkdir -p $(@D)
	cp web/node_modules/uplot/dist/$* $@

$(B)/web/%: web/%
	@mkdir -p $(@D)
	cp $< $@

.PHONY: web
web: $(WEB_OUT) $(WEB_VENDOR)

ALL_TARGETS += $(WEB_OUT) $(WEB_VENDOR)
# The browser tier drives the dashboard against a real lockstepd, so it comes with the server part.
ifneq ($(wildcard server/server.mk),)
TEST_TIERS += tests/browser/run.sh
endif
