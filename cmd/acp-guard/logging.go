package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/acp-guard/acp-guard/internal/safefile"
)

type logOptions struct {
	file   string
	level  string
	format string
}

// newLogger builds the slog logger; the returned closer closes a log file.
func newLogger(o logOptions, stderr io.Writer) (*slog.Logger, func() error, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", o.level)
	}
	w, closer := stderr, func() error { return nil }
	if o.file != "" {
		f, err := safefile.Open(o.file, safefile.Append)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		w, closer = f, f.Close
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(o.format) {
	case "text", "":
		h = slog.NewTextHandler(w, hopts)
	case "json":
		h = slog.NewJSONHandler(w, hopts)
	default:
		return nil, nil, fmt.Errorf("--log-format: %q is not text or json", o.format)
	}
	return slog.New(h), closer, nil
}
