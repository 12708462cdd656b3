package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// OverlayConfig is one overlay run: N proxies started with
// --catalogue-overlay store, all sharing one store, in front of demo
// agents whose every prompt fails with an error the embedded catalogue
// leaves unclassified; then `acp-guard catalogue publish` of an overlay
// with a rule for it.
type OverlayConfig struct {
	Bin     string // the acp-guard binary
	N       int
	Store   string // nats | file
	Overlay []byte // the overlay document to publish
	Rule    string // the id of its rule the failures must be classified by
	Dir     string
	Log     func(format string, args ...any) // progress; nil: none
	Timeout time.Duration                    // hang guard; 0: 5 minutes
}

// OverlayResult is what an overlay run measured. Ready is, per proxy,
// from the start of `catalogue publish` until the proxy logged that it
// validated the overlay and classifies with it from its next turn (the
// harness's clock when it read the line); Classified counts the sessions
// whose next prompt, sent once every proxy was ready, was classified by
// Rule under the overlay's catalogue version.
type OverlayResult struct {
	N, Classified int
	Store         string
	Publish       time.Duration   // the publish command, start to exit
	Ready         []time.Duration // sorted
	Load          [2][3]float64
}

// RunOverlay runs cfg.
func RunOverlay(ctx context.Context, cfg OverlayConfig) (*OverlayResult, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	overlay := filepath.Join(cfg.Dir, "overlay.json")
	if err := os.WriteFile(overlay, cfg.Overlay, 0o600); err != nil {
		return nil, err
	}
	state := filepath.Join(cfg.Dir, "state")
	circuits := "file"
	if cfg.Store == "nats" {
		ns, err := startNATS(-1, filepath.Join(cfg.Dir, "nats"))
		if err != nil {
			return nil, err
		}
		defer ns.stop()
		circuits = ns.url()
	}
	res := &OverlayResult{N: cfg.N, Store: cfg.Store}
	res.Load[0] = loadAvg()
	store := []string{"--circuits", circuits, "--state-dir", state, "--circuit-namespace", Namespace}
	env := append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(cfg.Dir, "config"), "XDG_STATE_HOME="+filepath.Join(cfg.Dir, "xdg-state"))
	argv := append(append([]string{cfg.Bin, "--log-level", "info", "--notices", "off", "--catalogue-overlay", "store"}, store...),
		"--", cfg.Bin, "demo-agent", "--scenario", "unknown-error", "--agent-name", "codex-acp")

	var mu sync.Mutex
	ready := map[int]time.Time{}
	onLog := func(e LogEvent) {
		if e.Kind == "overlay" {
			mu.Lock()
			if _, ok := ready[e.Proxy]; !ok {
				ready[e.Proxy] = e.At
			}
			mu.Unlock()
		}
	}
	var proxies []*proxy
	defer func() {
		for _, p := range proxies {
			p.kill()
		}
	}()
	start := time.Now()
	for i := range cfg.N {
		p, err := startProxy(ctx, i, argv, env, onLog)
		if err != nil {
			return nil, err
		}
		proxies = append(proxies, p)
		if err := p.send(request(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`) +
			request(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)); err != nil {
			return nil, fmt.Errorf("proxy %d: %w", i, err)
		}
	}
	for _, p := range proxies {
		f, err := p.wait(ctx, "2")
		if err != nil {
			return nil, err
		}
		if p.session = sessionID(f); p.session == "" {
			return nil, fmt.Errorf("proxy %d: session/new answered %s", p.i, f.raw)
		}
	}
	cfg.Log("%d proxies (%s) up, sessions open, in %v", cfg.N, cfg.Store, time.Since(start).Round(time.Millisecond))

	published := time.Now()
	pub := exec.CommandContext(ctx, cfg.Bin, append([]string{"catalogue", "publish", overlay}, store...)...)
	pub.Env = env
	if out, err := pub.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("catalogue publish: %v: %s", err, out)
	}
	res.Publish = time.Since(published)
	for {
		mu.Lock()
		n := len(ready)
		mu.Unlock()
		if n == cfg.N {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("hang guard: %d of %d proxies took up the overlay", n, cfg.N)
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, at := range ready {
		res.Ready = append(res.Ready, at.Sub(published))
	}
	slices.Sort(res.Ready)
	cfg.Log("all %d proxies validated the overlay %v after the publish started", cfg.N, res.Ready[len(res.Ready)-1].Round(time.Millisecond))

	for _, p := range proxies {
		if err := p.send(request(3, "session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}`, p.session))); err != nil {
			return nil, fmt.Errorf("proxy %d: %w", p.i, err)
		}
	}
	for _, p := range proxies {
		f, err := p.wait(ctx, "3")
		if err != nil {
			return nil, err
		}
		if f.Error != nil && strings.Contains(string(f.Error.Data), `"rule":"`+cfg.Rule+`"`) && strings.Contains(string(f.Error.Data), `+`) {
			res.Classified++
		}
	}
	for _, p := range proxies {
		p.closeInput()
	}
	for _, p := range proxies {
		p.waitExit(30 * time.Second)
	}
	res.Load[1] = loadAvg()
	return res, nil
}

// Quantile is the q-quantile (0–1) of the sorted durations ds.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(int(q*float64(len(ds))), len(ds)-1)]
}

// DemoOverlay is an overlay with one rule for the demo agent's
// unknown-error failure, and DemoOverlayRule its id.
const (
	DemoOverlayRule = "demo.frobnicator_unexpected.v1"
	DemoOverlay     = `{"version":"fleet-1","rules":[{"id":"` + DemoOverlayRule + `","tier":2,"adapter":"any","sources":["rpc_error"],
 "match":{"regex":"(?i)\\bdemo frobnicator returned an unexpected value\\b"},"code":"provider_unavailable","confidence":"medium","scope":"provider"}],
 "fixtures":[
  {"name":"+1","rule":"` + DemoOverlayRule + `","match":true,"evidence":{"source":"rpc_error","message":"the demo frobnicator returned an unexpected value"}},
  {"name":"-1","rule":"` + DemoOverlayRule + `","match":false,"code":"unclassified","evidence":{"source":"rpc_error","message":"notes: the frobnicator is a demo"}}]}`
)
