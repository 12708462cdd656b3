# interop.mk — real-agent captures and the interop suite (included from the
# top-level Makefile).
#
#   make interop-deps   install every pinned agent into $(ACP_GUARD_CACHE)
#   make transcripts    rerun every capture into testdata/transcripts/real
#                       (AGENTS=codex,claude SCENARIOS=success,rate_limit to narrow)
#   make interop-test   unit tests of the fake providers, the capture driver
#                       and the suite's client (no real agents)
#   make interop        the interop suite: client → acp-guard → real agent →
#                       fake provider (docs/INTEROP.md). It installs the
#                       agents it runs (dev/interop/install.sh suite) first.
#                       INTEROP_AGENTS=codex,gemini to narrow,
#                       INTEROP_RUN=TestInterop/codex/fallback for go test -run,
#                       INTEROP_OUT=dir to keep transcripts,
#                       INTEROP_PARALLEL=N scenarios at once (default 4),
#                       INTEROP_LOG=file to keep go test -json's output
#                       somewhere else than a new temporary file.
#                       It prints one line per scenario, the known agent
#                       bugs seen, and each failure's whole output.
#
# The install folder is outside the repository (default
# ~/.cache/acp-guard-interop); CI keeps it between runs, and npm's own
# download cache (~/.npm) makes a fresh folder a ~15 s install.

ACP_GUARD_CACHE ?= $(HOME)/.cache/acp-guard-interop
AGENTS ?= all
SCENARIOS ?= all
GO ?= go

INTEROP_AGENTS ?=
INTEROP_OUT ?=
INTEROP_RUN ?=
INTEROP_PARALLEL ?= 4

.PHONY: interop-deps interop-suite-deps transcripts interop-test interop

interop-deps:
	ACP_GUARD_CACHE=$(ACP_GUARD_CACHE) sh dev/interop/install.sh

interop-suite-deps:
	ACP_GUARD_CACHE=$(ACP_GUARD_CACHE) sh dev/interop/install.sh suite

transcripts: interop-deps
	$(GO) run ./dev/interop/cmd/capture -cache $(ACP_GUARD_CACHE) \
		-agent $(AGENTS) -scenario $(SCENARIOS) -out testdata/transcripts/real

interop-test:
	$(GO) test -race ./dev/interop/...

interop: interop-suite-deps
	@log="$${INTEROP_LOG:-$$(mktemp /tmp/acp-guard-interop.XXXXXX)}"; \
	echo "interop: go test -json output in $$log"; \
	ACP_GUARD_CACHE=$(ACP_GUARD_CACHE) ACP_GUARD_INTEROP_AGENTS=$(INTEROP_AGENTS) \
		ACP_GUARD_INTEROP_OUT=$(INTEROP_OUT) \
		$(GO) test -json -tags interop -count=1 -timeout 30m -parallel $(INTEROP_PARALLEL) \
		$(if $(INTEROP_RUN),-run '$(INTEROP_RUN)') ./dev/interop/suite/ 2>&1 | \
		$(GO) run ./dev/interop/cmd/testsummary -log "$$log"
