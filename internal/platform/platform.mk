# The six targets (internal/platform is where they differ): make cross
# builds each into bin/cross/ and vets every GOOS; make test-windows runs
# the Windows build's platform and transport tests and one end-to-end
# session under Wine (scripts/wine-test.sh installs wine64 when missing).
CROSS_OS := linux darwin windows
CROSS_ARCH := amd64 arm64
CROSS_DIR ?= bin/cross

.PHONY: cross vet-cross test-windows

cross: vet-cross
	@mkdir -p $(CROSS_DIR)
	@set -e; for os in $(CROSS_OS); do for arch in $(CROSS_ARCH); do \
		ext=; [ $$os = windows ] && ext=.exe; \
		echo "build $$os/$$arch"; \
		GOOS=$$os GOARCH=$$arch $(GOBUILD) -o $(CROSS_DIR)/acp-guard-$$os-$$arch$$ext ./cmd/acp-guard; \
	done; done
	@ls -l $(CROSS_DIR)

vet-cross:
	@set -e; for os in $(CROSS_OS); do echo "vet GOOS=$$os"; CGO_ENABLED=0 GOOS=$$os $(GO) vet ./...; done

test-windows:
	bash scripts/wine-test.sh
