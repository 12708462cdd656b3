# acp-guard — build, test, benchmark. `make help` lists the targets.
GO ?= go
BIN ?= bin/acp-guard
# The one version string (scripts/version.sh) and the facts stamped beside
# it into --version; .goreleaser.yaml stamps the same three. Computed once.
VERSION ?= $(shell scripts/version.sh)
COMMIT ?= $(shell scripts/version.sh commit)
DATE ?= $(shell scripts/version.sh date)
VERSION := $(VERSION)
COMMIT := $(COMMIT)
DATE := $(DATE)
# -s -w: no symbol table or DWARF (stack traces keep their function names
# and lines); CGO_ENABLED=0: a static binary, without libc's 1.3 MiB of
# resident pages (docs/PERFORMANCE.md, "Footprint: binary and memory").
# -trimpath and -buildvcs=false (the commit is stamped): the same inputs
# give the same bytes (docs/INSTALL.md, "Reproducible builds").
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
GOBUILD = CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)'

.PHONY: help build demo test test-short test-busy lint fuzz clean acp-schema fleet fleet-cluster console-fleet bench-jsonrpc2 test-collector test-browser

help:
	@echo "make build        build $(BIN)"
	@echo "make demo         build and run the demo (client -> acp-guard -> demo agent)"
	@echo "make test         the whole test suite, with the race detector where a race can happen"
	@echo "make acp-schema   fetch the official ACP JSON schema (npm) for the conformance test"
	@echo "make release-snapshot  release archives, SHA256SUMS, .deb/.rpm, Homebrew formula, npm tarballs into dist/ (GoReleaser)"
	@echo "make test-npm     pack the npm packages for this machine, install them offline, run sessions through npx"
	@echo "make test-short   the quick loop (~25 s): -short, no -race, no end-to-end tests of the built binary (TestE2E*)"
	@echo "make test-busy    CI (.ci/run) 3 times in a row, each in a fresh clone, beside 2 CPU hogs"
	@echo "make lint         gofmt, go vet, catalogue lint"
	@echo "make bench        end-to-end relay benchmark and micro-benchmarks"
	@echo "make bench-otel   the end-to-end benchmark with OpenTelemetry export on"
	@echo "make test-collector  acp-guard against the OpenTelemetry Collector's own OTLP receiver (a module of its own)"
	@echo "make test-browser    the console and a replay --html report in headless Chromium (a module of its own)"
	@echo "make bench-jsonrpc2  the relay against a sourcegraph/jsonrpc2 forwarder (ARCHITECTURE.md)"
	@echo "make fleet        shared circuits at N = 50/100/200 acp-guard processes (NATS, file store, a store restart)"
	@echo "make console-fleet   the console beside N=200 live sessions: page load and update latency (CONSOLE_FLEET_N=…)"
	@echo "make fleet-cluster  the fleet on a 3-server NATS cluster over network namespaces, with faults (root)"
	@echo "make fuzz         short fuzz runs of every parser"
	@echo "make transcripts  re-capture real-agent transcripts (needs Node and npm)"
	@echo "make interop      the interop suite against real agents (needs Node and npm)"
	@echo "make cross       build the six targets (linux, darwin, windows × amd64, arm64) into bin/cross, go vet each GOOS"
	@echo "make test-windows the Windows build's platform and transport tests and an end-to-end session under Wine"

build:
	$(GOBUILD) -o $(BIN) ./cmd/acp-guard

demo: build
	./$(BIN) demo

# make test runs every test, with the race detector wherever a race can
# happen. The race detector can only report goroutines racing: code that
# runs in one goroutine gains nothing from it and runs 10–13 times slower
# under it (the catalogue's corpus tests: 5 s of CPU without, 72 s with).
# So these run without -race, and only these:
#   RACE_FREE_PKGS   packages with no go statement in their code or tests
#                    (classification is pure: no I/O, no goroutines)
#   RACE_FREE_TESTS  tests that run commands in the test goroutine only and
#                    start none (catalogue list/show/test/lint/export)
# A test added here must stay that way; a renamed one falls back to -race
# (slower, never skipped).
RACE_FREE_PKGS := ./catalogue/ ./classify/
RACE_FREE_TESTS := ^TestCatalogueCommand$$

# scripts/test.sh runs every step even when one fails and ends with a
# summary of every failure.
test:
	GO='$(GO)' RACE_FREE_PKGS='$(RACE_FREE_PKGS)' RACE_FREE_TESTS='$(RACE_FREE_TESTS)' bash scripts/test.sh

test-busy:
	bash scripts/test-busy.sh $(RUNS) $(HOGS)

# The conformance test (internal/acpschema) skips without the schema
# (fails with CI=true); this installs it into .cache/acp-schema.
acp-schema:
	@scripts/acp-schema.sh

test-short:
	$(GO) test -short -count=1 ./...

# The OpenTelemetry Collector's OTLP receiver is a test dependency of its own
# module (telemetry/collectortest), so its ~55 modules stay out of go.mod.
test-collector:
	cd telemetry/collectortest && $(GO) test -count=1 ./...
	$(GO) test -count=1 -tags otlpgrpc -run GRPC ./telemetry

# The console and the replay report in a real browser (Debian's chromium,
# driven by chromedp): a module of its own, so chromedp stays out of go.mod.
# Screenshots land in its artefacts/ (BROWSERTEST_ARTEFACTS overrides).
test-browser:
	cd cmd/acp-guard/internal/console/browsertest && $(GO) test -count=1 -timeout 30m ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./cmd/acp-guard catalogue lint

FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzMembers$$' -fuzztime $(FUZZTIME) ./internal/jsonscan
	$(GO) test -run '^$$' -fuzz '^FuzzSanitize$$' -fuzztime $(FUZZTIME) ./classify
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./replay
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./policy

# Why the relay is not built on a JSON-RPC library (ARCHITECTURE.md): a
# module of its own (dev/bench/jsonrpc2cmp), so the library stays out of go.mod.
bench-jsonrpc2:
	cd dev/bench/jsonrpc2cmp && $(GO) test -count=1 -run Fidelity -v . && $(GO) test -count=1 -run '^$$' -bench . -count 3 .

# The fleet measurement of shared circuits (dev/fleet/, docs/CIRCUITS.md):
# FLEET_FLAGS passes flags to dev/fleet/cmd/fleet (e.g. -n 20 -stores nats; -overlay -n 200
# measures a catalogue publish reaching 200 running sessions instead, docs/CATALOGUE.md).
FLEET_FLAGS ?=
fleet:
	$(GO) run ./dev/fleet/cmd/fleet $(FLEET_FLAGS)

# The console beside N live guarded sessions sharing one state directory
# (scripts/console-fleet.sh; docs/OPERATIONS.md has the figures).
CONSOLE_FLEET_N ?= 200
console-fleet:
	bash scripts/console-fleet.sh $(CONSOLE_FLEET_N)

# The fleet on a three-server NATS cluster across network namespaces, with
# faults (needs root; dev/fleet/cmd/fleet-cluster, docs/CIRCUITS.md).
# FLEET_CLUSTER_FLAGS passes flags (e.g. -n 500 -hosts 5).
FLEET_CLUSTER_FLAGS ?=
fleet-cluster:
	$(GO) build -o bin/fleet-cluster ./dev/fleet/cmd/fleet-cluster
	./bin/fleet-cluster $(FLEET_CLUSTER_FLAGS)

clean:
	rm -rf bin

include release.mk
include dev/bench/bench.mk
include telemetry/bench.mk
include dev/interop/interop.mk
include internal/platform/platform.mk
