package acpguard_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/replay"
)

// serveGuard bounds one served session: a guard against hangs, not an
// assertion (the test then fails on the frames it did not get).
const serveGuard = 30 * time.Second

// serveAsRecorded serves events through acpguard.Serve in this process to
// a client that sends what the recorded client sent, each frame once the
// frames the recorded client had received before it have arrived, and
// returns every frame the client got.
func serveAsRecorded(t *testing.T, cfg acpguard.Config, events []replay.Event) [][]byte {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { // ends when the served session does
		_, err := acpguard.Serve(context.Background(), cfg, events, replay.ServeOptions{NoDelay: true}, acpguard.Streams{In: inR, Out: outW})
		outW.Close()
		served <- err
	}()
	frames := make(chan []byte)
	go func() { // ends at the end of the served output
		defer close(frames)
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				frames <- line
			}
			if err != nil {
				return
			}
		}
	}()
	hang := time.After(serveGuard)
	var got [][]byte
	receive := func() bool {
		select {
		case f, ok := <-frames:
			if ok {
				got = append(got, f)
			}
			return ok
		case <-hang:
			t.Fatalf("hang guard: served session stalled after %d frames", len(got))
			return false
		}
	}
	for _, ev := range events {
		switch {
		case ev.Dir == replay.DirA2C && !ev.Suppressed:
			if !receive() {
				t.Fatalf("served output ended after %d frames", len(got))
			}
		case ev.Dir == replay.DirC2A && ev.Original():
			if _, err := inW.Write(append(append([]byte(nil), ev.Bytes()...), '\n')); err != nil {
				t.Fatal(err)
			}
		}
	}
	inW.Close()
	for receive() {
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	return got
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
			equalFrames(t, normalizeTimes(got), normalizeTimes(clientView(events)))
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
		equalFrames(t, normalizeTimes(res.Client), normalizeTimes(clientView(events)))
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
