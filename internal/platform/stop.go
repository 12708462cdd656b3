package platform

// StopClosesStdin reports whether a stop closes the agent's stdin before
// it is signalled: on Windows, where a console control event is all there
// is and an agent may not have a console to receive it on, end of input is
// the first thing an agent is told.
const StopClosesStdin = stopClosesStdin

// StopExitCode is the exit code of an agent that a forwarded SIGTERM
// ended: 128+SIGTERM on POSIX; 128+SIGINT on Windows, where the stop is a
// CTRL_BREAK_EVENT (ExitSignal).
const StopExitCode = stopExitCode
