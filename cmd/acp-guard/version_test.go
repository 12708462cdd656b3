package main

import (
	"runtime"
	"testing"
)

// The stamped facts (make build, the release build) make the version
// line; without them it falls back to what go build recorded.
func TestVersionLine(t *testing.T) {
	defer func(v, c, d string) { version, commit, date = v, c, d }(version, commit, date)
	version, commit, date = "1.2.3-dev.4.gabc", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T20:19:36Z"
	want := "acp-guard 1.2.3-dev.4.gabc (commit 0123456789abcdef0123456789abcdef01234567, 2026-12-01T20:19:36Z, " +
		runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	if got := versionLine(); got != want {
		t.Errorf("stamped: versionLine() = %q, want %q", got, want)
	}
	if got := versionString(); got != "1.2.3-dev.4.gabc" {
		t.Errorf("stamped: versionString() = %q", got)
	}
	version, commit, date = "", "", ""
	if got := versionString(); got == "" {
		t.Error("unstamped: versionString() is empty")
	}
}
