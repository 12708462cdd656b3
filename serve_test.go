package acpguard_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/replay"
)

// serveAsRecorded serves events through acpguard.Serve in this process to
// a client (internal/acptest) that sends what the recorded client sent,
// each frame once the frames the recorded client had received before it
// have arrived, and returns every frame the client got.
func serveAsRecorded(t *testing.T, cfg acpguard.Config, events []replay.Event) [][]byte {
	t.Helper()
	p := acptest.Pipe(t, acptest.Options{Record: true}, func(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
		_, err := acpguard.Serve(ctx, cfg, events, replay.ServeOptions{NoDelay: true}, acpguard.Streams{In: stdin, Out: stdout})
		return err
	})
	for _, ev := range events {
		switch {
		case ev.Dir == replay.DirA2C && !ev.Suppressed:
			p.Line()
		case ev.Dir == replay.DirC2A && ev.Original():
			p.Send(string(ev.Bytes()) + "\n")
		}
	}
	p.CloseStdin()
	p.RestBytes()
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	return p.Lines()
}

// A recorded session served through acpguard.Serve (replay --serve) gets
// the live client's frames: the same pipeline, with the recorded
// configuration — and it leaves nothing in the state directory live
// sessions share (circuits and the attempt log are in memory). A served
// session runs in real time, so the goldens whose outcome depended on a
// live race (late_activity: the late frame against the attempt record's
// write) or on a timer (retries, the stall watchdog) are left to the
// offline replay, which follows the recorded order.
func TestServeMatchesLive(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	for _, name := range []string{"fallback_chain_then_circuit_open", "unsafe", "setup_failed", "compaction_failed", "compacted", "agent_exited", "launch_failed"} {
		t.Run(name, func(t *testing.T) {
			events := readTranscript(t, filepath.Join(terminalDir, name+".jsonl"))
			got := serveAsRecorded(t, acpguard.Config{}, events)
			acptest.EqualFrames(t, "client frames, served (got) and live (want)", normalizeTimes(got), normalizeTimes(replay.ClientView(events)))
		})
	}
	if entries, _ := os.ReadDir(state); len(entries) > 0 {
		t.Errorf("served sessions wrote to the state directory: %v", entries)
	}
}

// Replayed sessions keep their circuits in memory: a session that opens
// circuits (the fallback chain) leaves the next replay of the same
// recording unaffected, and nothing is written to the state directory.
// Named explicitly, the file store is used.
func TestReplayEphemeralState(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	events := readTranscript(t, filepath.Join(terminalDir, "fallback_chain_then_circuit_open.jsonl"))
	for i := range 2 {
		res, err := acpguard.Replay(events, acpguard.Config{})
		if err != nil {
			t.Fatal(err)
		}
		acptest.EqualFrames(t, "client frames, replayed (got) and live (want)", normalizeTimes(res.Client), normalizeTimes(replay.ClientView(events)))
		if t.Failed() {
			t.Fatalf("replay %d differs from the recording", i+1)
		}
	}
	if entries, _ := os.ReadDir(state); len(entries) > 0 {
		t.Errorf("replays wrote to the state directory: %v", entries)
	}
	dir := t.TempDir()
	if _, err := acpguard.Replay(events, acpguard.Config{Circuits: "file", StateDir: dir}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) == 0 {
		t.Errorf("a replay told to use the file store wrote nothing to %s", dir)
	}
}
