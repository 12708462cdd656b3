package bench

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestArgv(t *testing.T) {
	b := Binaries{Guard: "/g", ByteCopy: "/bc"}
	w := Workload{Scenario: "stream", Count: 5, Size: 64}
	agent := []string{"/g", "demo-agent", "--scenario", "stream", "--count", "5", "--size", "64"}
	for _, tt := range []struct {
		m    Mode
		want []string
	}{
		{Direct, agent},
		{ByteCopy, append([]string{"/bc", "--"}, agent...)},
		{Guard, append([]string{"/g", "--log-level", "error", "--"}, agent...)},
	} {
		if got := b.Argv(tt.m, w); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.m, got, tt.want)
		}
	}
	b.Agent = "/a"
	if got := b.Argv(Direct, Workload{Scenario: "empty"}); !slices.Equal(got, []string{"/a", "demo-agent", "--scenario", "empty"}) {
		t.Errorf("separate agent: got %q", got)
	}
}

// TestRunEveryMode runs a small workload through the real processes of each
// configuration and checks what was counted, not how fast.
func TestRunEveryMode(t *testing.T) {
	w := Workload{Name: "tiny", Scenario: "stream", Count: 50, Size: 200, Warmup: 1}
	bins := binaries(t)
	for _, m := range Modes {
		t.Run(m.String(), func(t *testing.T) {
			res, err := Run(context.Background(), bins, m, w, 3)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := res.Prompts, 3; got != want {
				t.Errorf("got %d prompts, want %d", got, want)
			}
			if got, want := res.Frames, int64(3*51); got != want {
				t.Errorf("got %d frames, want %d", got, want)
			}
			if got, want := len(res.Latencies), 3; got != want {
				t.Errorf("got %d latencies, want %d", got, want)
			}
			if !m.Relayed() && res.RelayCPU != 0 {
				t.Errorf("direct: got relay CPU %v, want 0", res.RelayCPU)
			}
			if m.Relayed() && res.PeakRSS <= 0 {
				t.Errorf("got peak RSS %d, want > 0", res.PeakRSS)
			}
			if !m.Relayed() && res.PeakRSS != 0 {
				t.Errorf("direct: got peak RSS %d, want 0", res.PeakRSS)
			}
		})
	}
}

func TestStartFailsOnBrokenAgent(t *testing.T) {
	// An agent that exits at once: the handshake fails with its stderr.
	_, err := Start(context.Background(), Direct, []string{"sh", "-c", "echo gone >&2; exit 3"}, nil)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("gone")) {
		t.Fatalf("got %v, want a handshake error naming the stderr", err)
	}
}

func TestByteCopy(t *testing.T) {
	bins := binaries(t)
	t.Run("relays bytes both ways", func(t *testing.T) {
		in := "line one\n{\"x\":\"ünïcode\"}\r\n\nno newline at end"
		cmd := exec.Command(bins.ByteCopy, "--", "cat")
		cmd.Stdin = bytes.NewBufferString(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("got %q, want %q", out, in)
		}
	})
	for _, tt := range []struct {
		name   string
		script string
		want   int
	}{
		{"exit code", "exit 7", 7},
		{"signal", "kill -TERM $$", 128 + 15},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bins.ByteCopy, "sh", "-c", tt.script)
			err := cmd.Run()
			if got := cmd.ProcessState.ExitCode(); got != tt.want {
				t.Errorf("got exit code %d (%v), want %d", got, err, tt.want)
			}
		})
	}
	t.Run("usage", func(t *testing.T) {
		cmd := exec.Command(bins.ByteCopy)
		_ = cmd.Run()
		if got, want := cmd.ProcessState.ExitCode(), 2; got != want {
			t.Errorf("got exit code %d, want %d", got, want)
		}
	})
	t.Run("agent not found", func(t *testing.T) {
		cmd := exec.Command(bins.ByteCopy, "--", "/nonexistent/agent")
		_ = cmd.Run()
		if got, want := cmd.ProcessState.ExitCode(), 127; got != want {
			t.Errorf("got exit code %d, want %d", got, want)
		}
	})
}

func TestCloseKillsAHangingProcess(t *testing.T) {
	// "hang" stays after stdin EOF; Close must give up and kill it.
	w := Workload{Scenario: "hang"}
	s, err := Start(context.Background(), Direct, binaries(t).Argv(Direct, w), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(100 * time.Millisecond); err == nil {
		t.Fatal("got nil error, want a did-not-exit error")
	}
}
