package replay

import (
	"strconv"
	"strings"

	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/transport"
)

// signalNumber understands "SIGKILL", "KILL", "9" and Go's description
// ("killed"); it returns 0 for anything else.
func signalNumber(name string) int {
	name = strings.TrimSpace(name)
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 128 {
		return n
	}
	// One table of names: transport's ("SIGKILL"), then Go's descriptions.
	upper := "SIG" + strings.TrimPrefix(strings.ToUpper(name), "SIG")
	for n := 1; n < 65; n++ {
		if transport.SignalName(platform.Signal(n)) == upper || strings.EqualFold(platform.Signal(n).String(), name) {
			return n
		}
	}
	return 0
}

// exitStatus is the status a process exits with to report a recorded exit:
// 128+N for signal N, else the code (1 when the code is negative).
func exitStatus(code int, signal string) int {
	if signal != "" {
		if n := signalNumber(signal); n > 0 {
			return 128 + n
		}
	}
	if code < 0 || code > 255 {
		return 1
	}
	return code
}
