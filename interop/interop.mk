# interop.mk — real-agent captures (included from the top-level Makefile).
#
#   make interop-deps   install pinned agents into $(ACP_GUARD_CACHE)
#   make transcripts    rerun every capture into testdata/transcripts/real
#                       (AGENTS=codex,claude SCENARIOS=success,rate_limit to narrow)
#   make interop-test   unit tests of the fake providers and the capture driver

ACP_GUARD_CACHE ?= $(HOME)/.cache/acp-guard-interop
AGENTS ?= all
SCENARIOS ?= all
GO ?= go

.PHONY: interop-deps transcripts interop-test

interop-deps:
	ACP_GUARD_CACHE=$(ACP_GUARD_CACHE) sh interop/install.sh

transcripts: interop-deps
	$(GO) run ./interop/cmd/capture -cache $(ACP_GUARD_CACHE) \
		-agent $(AGENTS) -scenario $(SCENARIOS) -out testdata/transcripts/real

interop-test:
	$(GO) test -race ./interop/...
