package transport

import "github.com/acp-guard/acp-guard/internal/platform"

// SignalName returns the conventional name of sig ("SIGTERM").
func SignalName(sig platform.Signal) string { return platform.SignalName(sig) }
