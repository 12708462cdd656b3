package replay

import (
	"strconv"
	"strings"
	"syscall"
)

// signalNames are the signals an agent is commonly killed by.
var signalNames = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT,
	"ILL": syscall.SIGILL, "TRAP": syscall.SIGTRAP, "ABRT": syscall.SIGABRT,
	"BUS": syscall.SIGBUS, "FPE": syscall.SIGFPE, "KILL": syscall.SIGKILL,
	"USR1": syscall.SIGUSR1, "SEGV": syscall.SIGSEGV, "USR2": syscall.SIGUSR2,
	"PIPE": syscall.SIGPIPE, "ALRM": syscall.SIGALRM, "TERM": syscall.SIGTERM,
}

// signalNumber understands "SIGKILL", "KILL", "9" and Go's description
// ("killed"); it returns 0 for anything else.
func signalNumber(name string) int {
	name = strings.TrimSpace(name)
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 128 {
		return n
	}
	if sig, ok := signalNames[strings.TrimPrefix(strings.ToUpper(name), "SIG")]; ok {
		return int(sig)
	}
	for n := 1; n < 65; n++ {
		if strings.EqualFold(syscall.Signal(n).String(), name) {
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
