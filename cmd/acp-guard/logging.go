package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/safefile"
	"github.com/acp-guard/acp-guard/internal/syncio"
)

type logOptions struct {
	file   string
	level  string
	format string
}

// newLogger builds the slog logger. diag is where everything else acp-guard
// writes besides the protocol goes — the agent's stderr copy included: the
// log file when there is one (shared with the logger under one lock), else
// stderr. The returned closer closes a log file.
func newLogger(o logOptions, stderr io.Writer) (log *slog.Logger, diag io.Writer, closer func() error, err error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.level)); err != nil {
		return nil, nil, nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", o.level)
	}
	w, closer := stderr, func() error { return nil }
	if o.file != "" {
		f, err := safefile.Open(o.file, safefile.Append)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		w, closer = syncio.NewWriter(f), f.Close
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(o.format) {
	case "text", "":
		h = slog.NewTextHandler(w, hopts)
	case "json":
		h = slog.NewJSONHandler(w, hopts)
	default:
		return nil, nil, nil, fmt.Errorf("--log-format: %q is not text or json", o.format)
	}
	return slog.New(h), w, closer, nil
}

// redactingWriter redacts what it writes (classify.Redact). The agent's
// stderr goes through it on its way into a --log-file: a file acp-guard
// stores, where provider text is redacted like in acp-guard's own log lines
// and in transcripts. (Passed through to acp-guard's stderr, the agent's
// stderr stays as the agent wrote it.) The transport writes whole lines, and
// an over-long line in 64 KiB pieces, each redacted on its own.
type redactingWriter struct{ w io.Writer }

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, classify.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
