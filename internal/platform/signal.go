package platform

import (
	"os"
	"strconv"
	"syscall"
)

// Signal is a signal number. On Windows there are no signals to send: the
// numbers name what a stop means (Group.Signal) and what an exit code
// above 128 stands for.
type Signal = syscall.Signal

// The signals every OS defines (Windows as numbers only).
const (
	SIGHUP  = syscall.SIGHUP
	SIGINT  = syscall.SIGINT
	SIGQUIT = syscall.SIGQUIT
	SIGKILL = syscall.SIGKILL
	SIGPIPE = syscall.SIGPIPE
	SIGTERM = syscall.SIGTERM
	SIGABRT = syscall.SIGABRT
	SIGSEGV = syscall.SIGSEGV
)

// Conn is implemented by files and connections that expose their
// descriptor (os.File, net.Conn); RawConn is the descriptor's access.
type (
	Conn    = syscall.Conn
	RawConn = syscall.RawConn
)

// Errors the callers compare against with errors.Is.
const (
	EISDIR = syscall.EISDIR
	ELOOP  = syscall.ELOOP
	ESRCH  = syscall.ESRCH
)

// StopSignals are the signals acp-guard treats as "stop": forwarded to the
// agent on POSIX. On Windows the runtime turns Ctrl-C and Ctrl-Break into
// SIGINT and a console close, logoff or shutdown into SIGTERM; SIGHUP never
// arrives there.
var StopSignals = []os.Signal{SIGINT, SIGTERM, SIGHUP}

// SignalName returns the conventional name of sig ("SIGTERM").
func SignalName(sig Signal) string {
	if n, ok := signalNames[sig]; ok {
		return n
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// SignalNumbers lists the signal numbers that have a name on this OS.
func SignalNumbers() []Signal {
	out := make([]Signal, 0, len(signalNames))
	for s := range signalNames {
		out = append(out, s)
	}
	return out
}

// ExitSignal reports the signal that ended a process, if one did (never
// on Windows, where a process ends with an exit code).
func ExitSignal(ps *os.ProcessState) (Signal, bool) {
	if ps == nil {
		return 0, false
	}
	return exitSignal(ps)
}

// AsSignal converts an os.Signal that is a signal number.
func AsSignal(s os.Signal) (Signal, bool) {
	sig, ok := s.(syscall.Signal)
	return sig, ok
}
