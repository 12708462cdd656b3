package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
		if err := os.MkdirAll(filepath.Dir(o.file), 0o700); err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		f, err := os.OpenFile(o.file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		_ = f.Chmod(0o600)
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
