package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	fp "github.com/acp-guard/acp-guard/dev/interop/fakeprovider"
)

// Config is one capture: an agent, a scenario, where things are.
type Config struct {
	Agent    Agent
	Scenario Scenario
	Cache    string        // install folder of the agents
	OutDir   string        // transcripts root; files go to OutDir/<agent>/<scenario>.*
	Timeout  time.Duration // overrides the scenario's
	Log      io.Writer     // progress and fake-provider request log (nil: discard)
}

// Sidecar is written next to each transcript as <scenario>.provider.json:
// what the fake provider was told and what it saw.
type Sidecar struct {
	Agent    string            `json:"agent"`
	Adapter  string            `json:"adapter"`
	Scenario string            `json:"scenario"`
	Env      []string          `json:"env"`      // agent environment, PATH left out
	Settings map[string]string `json:"settings"` // files written under the agent's home
	Script   fp.Script         `json:"script"`
	Requests []fp.Request      `json:"requests"`
	Routes   map[string]int    `json:"routes"`
	Result   SidecarResult     `json:"result"`
}

// SidecarResult is the client's view of the turn.
type SidecarResult struct {
	StopReason  string          `json:"stopReason,omitempty"`
	Error       json.RawMessage `json:"error,omitempty"`
	ErrorMethod string          `json:"errorMethod,omitempty"`
	TimedOut    bool            `json:"timedOut,omitempty"`
	ExitCode    int             `json:"exitCode"`
	Signal      string          `json:"signal,omitempty"`
	ElapsedMs   int64           `json:"elapsedMs"`
}

// Capture runs one capture and writes its transcript and sidecar.
func Capture(ctx context.Context, c Config) (Sidecar, error) {
	logw := c.Log
	if logw == nil {
		logw = io.Discard
	}
	script := c.Scenario.Script(c.Agent.API)
	if script == nil {
		return Sidecar{}, fmt.Errorf("capture: scenario %s does not apply to %s", c.Scenario.Name, c.Agent.Name)
	}
	// Under the cache, not /tmp: codex refuses to set up helpers in /tmp.
	tmp := filepath.Join(c.Cache, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return Sidecar{}, err
	}
	base, err := os.MkdirTemp(tmp, "capture-")
	if err != nil {
		return Sidecar{}, err
	}
	defer os.RemoveAll(base)
	home, cwd, tmpdir := filepath.Join(base, "home"), filepath.Join(base, "work"), filepath.Join(base, "tmp")
	for _, d := range []string{home, cwd, tmpdir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Sidecar{}, err
		}
	}
	srv, err := fp.Start(script, logw)
	if err != nil {
		return Sidecar{}, err
	}
	defer srv.Close()
	tune := Tune{Retries: c.Agent.Retries, IdleTimeout: c.Scenario.Idle}
	url := srv.URL
	if c.Scenario.Offline {
		url = OfflineURL
	}
	launch, err := c.Agent.Setup(c.Cache, home, url, tune)
	if err != nil {
		return Sidecar{}, fmt.Errorf("capture: setup %s: %w", c.Agent.Name, err)
	}
	if c.Scenario.NoKey {
		launch.Env = withoutCredentials(launch.Env)
	}
	if err := checkArgv(launch.Argv); err != nil {
		return Sidecar{}, err
	}
	// gemini writes error reports to os.tmpdir(): keep them in the capture.
	launch.Env = append(launch.Env, "TMPDIR="+tmpdir)
	norm := NewNormalizer(map[string]string{
		home:                                   StableHome,
		cwd:                                    StableCwd,
		base:                                   "/tmp/acp-capture",
		srv.URL:                                StableURL,
		c.Cache:                                StableNode,
		strings.TrimPrefix(srv.URL, "http://"): strings.TrimPrefix(StableURL, "http://"),
	})
	dir := filepath.Join(c.OutDir, c.Agent.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Sidecar{}, err
	}
	f, err := os.Create(filepath.Join(dir, c.Scenario.Name+".jsonl"))
	if err != nil {
		return Sidecar{}, err
	}
	defer f.Close()
	start := time.Now()
	rec := NewRecorder(f, func() time.Duration { return time.Since(start) }, norm)
	rec.Meta(launch.Argv, c.Agent.Adapter, c.Scenario.Name)
	timeout := c.Timeout
	if timeout == 0 {
		timeout = c.Scenario.Timeout
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	res, err := Run(ctx, Options{
		Argv: launch.Argv, Env: launch.Env, Dir: cwd,
		Adapter: c.Agent.Adapter, Scenario: c.Scenario.Name,
		AuthMethod: launch.AuthMethod, Timeout: timeout, Recorder: rec,
	})
	elapsed := time.Since(start)
	if err != nil {
		return Sidecar{}, err
	}
	if err := f.Close(); err != nil {
		return Sidecar{}, err
	}
	srv.Close()
	st := srv.Stats()
	sc := Sidecar{
		Agent: c.Agent.Name, Adapter: c.Agent.Adapter, Scenario: c.Scenario.Name,
		Settings: map[string]string{}, Script: script, Requests: st.Requests, Routes: st.Routes,
		Result: SidecarResult{StopReason: res.StopReason, Error: json.RawMessage(norm.Bytes(res.Error)),
			ErrorMethod: res.ErrorMethod, TimedOut: res.TimedOut, ExitCode: res.ExitCode, Signal: res.Signal,
			ElapsedMs: elapsed.Milliseconds()},
	}
	if len(res.Error) == 0 {
		sc.Result.Error = nil
	}
	for _, e := range launch.Env {
		if !strings.HasPrefix(e, "PATH=") {
			sc.Env = append(sc.Env, norm.String(e))
		}
	}
	for k, v := range launch.Settings {
		sc.Settings[k] = norm.String(v)
	}
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return Sidecar{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, c.Scenario.Name+".provider.json"), append(b, '\n'), 0o644); err != nil {
		return Sidecar{}, err
	}
	return sc, nil
}
