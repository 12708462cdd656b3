# release.mk — release artefacts and the npm packages (included from the
# top-level Makefile; docs/INSTALL.md).
#
#   make release-snapshot  GoReleaser (.goreleaser.yaml) into dist/: the six
#                          archives, SHA256SUMS, .deb/.rpm, the Homebrew
#                          formula; then the seven npm tarballs into
#                          dist/npm (npm/pack.mjs). Nothing is published.
#   make test-npm          the npm packages of this machine's platform,
#                          packed from a `make build` binary, installed
#                          offline into a fresh folder and run through npx
#                          (npm/npm_test.go). Needs Node and npm, not
#                          GoReleaser.
#
# GoReleaser is not a dependency of the module: it is installed, at the
# pinned version, into a folder outside the repository ($(TOOLS_DIR); CI may
# keep it between runs) the first time it is needed — a big build, minutes
# on two cores — and reused after that.

GORELEASER_VERSION := v2.15.1
TOOLS_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/acp-guard-tools
GORELEASER := $(TOOLS_DIR)/goreleaser-$(GORELEASER_VERSION)/goreleaser
GORELEASER_FLAGS ?=

.PHONY: release-snapshot test-npm goreleaser

goreleaser: $(GORELEASER)

$(GORELEASER):
	GOBIN=$(dir $@) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

release-snapshot: $(GORELEASER)
	ACP_GUARD_VERSION=$(VERSION) ACP_GUARD_COMMIT=$(COMMIT) ACP_GUARD_DATE=$(DATE) \
		ACP_GUARD_TIMESTAMP=$$(scripts/version.sh timestamp) \
		$(GORELEASER) release --snapshot --clean --skip=publish $(GORELEASER_FLAGS)
	node npm/pack.mjs --version $(VERSION) --out dist/npm --dist dist --all

test-npm:
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	start=$$(date +%s) && \
	$(GOBUILD) -o "$$d/acp-guard" ./cmd/acp-guard && \
	node npm/pack.mjs --version $(VERSION) --out "$$d/npm" --bin "$$($(GO) env GOOS)/$$($(GO) env GOARCH)=$$d/acp-guard" && \
	ACP_GUARD_TEST_BIN="$$d/acp-guard" ACP_GUARD_TEST_NPM_PACKS="$$d/npm" ACP_GUARD_TEST_NPM_VERSION=$(VERSION) \
		$(GO) test -count=1 -v -run '^TestE2ENpmPackages$$' ./npm && \
	echo "test-npm: passed in $$(( $$(date +%s) - start )) s"
