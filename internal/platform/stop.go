package platform

// StopClosesStdin reports whether a stop closes the agent's stdin before
// it is signalled: on Windows, where a console control event is all there
// is and an agent may not have a console to receive it on, end of input is
// the first thing an agent is told.
const StopClosesStdin = stopClosesStdin
