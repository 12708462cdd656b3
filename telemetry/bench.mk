# telemetry/bench.mk — relay cost with telemetry on; included from the Makefile.
#
#   make bench-otel   the end-to-end report with OTLP export on (to a local
#                     sink, dev/bench/cmd/otlpsink); compare with make bench-e2e

.PHONY: bench-otel

bench-otel:
	$(GO) run ./dev/bench/cmd/otlpsink -- $(GO) run ./dev/bench/cmd/e2ebench $(BENCH_E2E_FLAGS)
