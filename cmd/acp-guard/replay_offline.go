package main

import (
	"context"
	"errors"
)

// playOffline replays transcripts through the guard pipeline.
//
// Temporary: the lead replaces this file once the guard pipeline exists.
func playOffline(ctx context.Context, o *replayOptions, files []string) error {
	return withCode(exitFailure, errors.New("offline replay not wired yet"))
}
