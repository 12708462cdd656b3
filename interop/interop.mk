# interop.mk — real-agent captures (included from the top-level Makefile).
#
#   make interop-deps   install pinned agents into $(ACP_GUARD_CACHE)
#   make transcripts    rerun every capture into testdata/transcripts/real
#                       (AGENTS=codex,claude SCENARIOS=success,rate_limit to narrow)
#   make interop-test   unit tests of the fake providers, the capture driver
#                       and the suite's client (no real agents)
#   make interop        the interop suite: client → acp-guard → real agent →
#                       fake provider (docs/INTEROP.md); INTEROP_AGENTS=codex,gemini
#                       to narrow, INTEROP_OUT=dir to keep transcripts

ACP_GUARD_CACHE ?= $(HOME)/.cache/acp-guard-interop
AGENTS ?= all
SCENARIOS ?= all
GO ?= go

INTEROP_AGENTS ?=
INTEROP_OUT ?=

.PHONY: interop-deps transcripts interop-test interop

interop-deps:
	ACP_GUARD_CACHE=$(ACP_GUARD_CACHE) sh interop/install.sh

transcripts: interop-deps
	$(GO) run ./interop/cmd/capture -cache $(ACP_GUARD_CACHE) \
		-agent $(AGENTS) -scenario $(SCENARIOS) -out testdata/transcripts/real

interop-test:
	$(GO) test -race ./interop/...

interop: interop-deps
	ACP_GUARD_CACHE=$(ACP_GUARD_CACHE) ACP_GUARD_INTEROP_AGENTS=$(INTEROP_AGENTS) \
		ACP_GUARD_INTEROP_OUT=$(INTEROP_OUT) \
		$(GO) test -tags interop -count=1 -timeout 10m -v ./interop/suite/
