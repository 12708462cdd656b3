# dev/bench/bench.mk — the `bench` target; included from the top-level Makefile.
#
#   make bench           end-to-end relay benchmark (Markdown report on
#                        stdout), then every package's Go benchmarks
#   make bench-e2e       only the end-to-end report
#   make bench-micro     only `go test -bench` across the module
#
# BENCH_E2E_FLAGS passes flags to e2ebench (e.g. -rounds 5 -workloads roundtrip);
# BENCH_FLAGS to go test (e.g. -benchtime 2x -count 5).

GO ?= go
BENCH_E2E_FLAGS ?=
BENCH_FLAGS ?=

.PHONY: bench bench-e2e bench-micro

bench: bench-e2e bench-micro

bench-e2e:
	$(GO) run ./dev/bench/cmd/e2ebench $(BENCH_E2E_FLAGS)

bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem $(BENCH_FLAGS) ./...
