package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/demoagent"
	"github.com/acp-guard/acp-guard/transport"
)

type demoOptions struct {
	scenarios []string
	policy    string
	raw       bool
}

func init() { subcommands = append(subcommands, newDemoCmd) }

func newDemoCmd(s *streams) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run client → acp-guard → demo-agent sessions and show what the client sees",
		Long: `demo runs whole ACP sessions through acp-guard against the built-in demo
agent, as a client would, and prints what the client receives: passing
turns, a Cursor control chunk turned into one ProviderError, an agent error
annotated with its classification, and a transient failure recovered by a
retry policy. No network and no external agent are needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDemo(cmd.Context(), s, o) },
	}
	cmd.Flags().StringSliceVar(&o.scenarios, "scenario", nil, "demo-agent scenarios to run (default: a tour)")
	cmd.Flags().StringVar(&o.policy, "policy", "", "policy document for the retry scenarios (default: 2 transient retries from 1s)")
	cmd.Flags().BoolVar(&o.raw, "raw", false, "print the raw frames the client receives")
	return cmd
}

// demoStep is one session of the tour.
type demoStep struct {
	title    string
	scenario string
	args     []string
	policy   bool
}

var demoTour = []demoStep{
	{"A healthy turn passes through untouched", "success", nil, false},
	{"Cursor reports a provider failure as text, then end_turn", "cursor-retriable", nil, false},
	{"Cursor's observed incident: thoughts and a tool call, then the failure", "cursor-incident", nil, false},
	{"codex-acp fails with -32603 Internal error", "codex-error", nil, false},
	{"A transient failure, twice, then success — with a retry policy", "fail-then-succeed", []string{"--agent-name", "@zed-industries/claude-agent-acp", "--fail", "2"}, true},
	{"Text streamed, then a failure: never retried", "text-then-fail", []string{"--agent-name", "@zed-industries/claude-agent-acp"}, true},
	{"The context window overflows: acp-guard runs the agent's /compact, then retries once", "compact", nil, true},
}

const demoPolicy = `{"version":1,
 "transient":{"retry":{"enabled":true,"max_retries":2,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
 "hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
 "request":{"compact_then_retry":true}}`

// demoPolicyText says what demoPolicy does, as it does it: full jitter
// draws each delay from 0 to the doubling backoff (1s, then 2s), and the
// shared circuits the demo runs with floor it at their least cooldown,
// 1s (docs/POLICY.md) — so the first retry comes after 1s and the second
// after 1–2s. The notices show each drawn delay.
const demoPolicyText = "transient → 2 retries, the first after 1s, the second after 1–2s (full jitter), then stop; context overflow → compact, retry once"

func runDemo(ctx context.Context, s *streams, o *demoOptions) error {
	self, err := os.Executable()
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("demo: locating acp-guard: %w", err))
	}
	steps := demoTour
	if len(o.scenarios) > 0 {
		if err := checkScenarios(o.scenarios); err != nil {
			return withCode(exitUsage, err)
		}
		steps = nil
		for _, sc := range o.scenarios {
			steps = append(steps, demoStep{title: "Scenario " + sc, scenario: sc, policy: o.policy != ""})
		}
	}
	// A private directory (0700, unpredictable name) for the demo's
	// policy and attempt log: never a shared, guessable path in /tmp.
	dir, err := os.MkdirTemp("", "acp-guard-demo-")
	if err != nil {
		return withCode(exitFailure, err)
	}
	defer os.RemoveAll(dir)
	policyFile := o.policy
	if policyFile == "" {
		policyFile = dir + "/policy.json"
		if err := os.WriteFile(policyFile, []byte(demoPolicy), 0o600); err != nil {
			return withCode(exitFailure, err)
		}
	}
	for i, st := range steps {
		fmt.Fprintf(s.out, "\n── %d. %s\n", i+1, st.title)
		argv := append([]string{self, "demo-agent", "--scenario", st.scenario}, st.args...)
		ro := &runOptions{maxLine: transport.DefaultMaxLine, grace: 2e9, argv: argv, log: logOptions{level: "error", format: "text"}}
		ro.guard.notices = "thought"
		ro.guard.stall = demoStall[st.scenario]
		if st.policy {
			ro.guard.policyFile = policyFile
			ro.guard.stateDir = dir + "/state"
			fmt.Fprintf(s.out, "   policy: %s\n", demoPolicyText)
		}
		if err := demoSession(ctx, s, ro, o.raw); err != nil {
			return withCode(exitFailure, err)
		}
	}
	return nil
}

// demoSession plays one client session through an in-process acp-guard.
func demoSession(ctx context.Context, s *streams, ro *runOptions, raw bool) error {
	cin, pw := io.Pipe()  // client → proxy
	pr, cout := io.Pipe() // proxy → client
	done := make(chan error, 1)
	go func() { // waited for below
		ps := &streams{in: cin, out: cout, err: io.Discard}
		done <- runProxy(ctx, ps, ro, nil)
		cout.Close()
	}()
	send := func(f string) { fmt.Fprintln(pw, f) }
	dec := json.NewDecoder(pr)
	next := func() (map[string]any, error) {
		var m map[string]any
		err := dec.Decode(&m)
		return m, err
	}
	await := func(id float64) (map[string]any, error) {
		for {
			m, err := next()
			if err != nil {
				return nil, err
			}
			if raw {
				b, _ := json.Marshal(m)
				fmt.Fprintf(s.out, "   « %s\n", b)
			}
			if mid, ok := m["id"].(float64); ok && mid == id && m["method"] == nil {
				return m, nil
			}
			if m["method"] == "session/update" {
				describeUpdate(s.out, m)
			} else if m["method"] != nil {
				// Answer agent requests like a cautious client.
				resp := map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{}}
				if m["method"] == "session/request_permission" {
					resp["result"] = map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}
				}
				b, _ := json.Marshal(resp)
				send(string(b))
				fmt.Fprintf(s.out, "   agent asked the client: %v\n", m["method"])
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	if _, err := await(0); err != nil {
		return err
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	m, err := await(1)
	if err != nil {
		return err
	}
	sid, _ := m["result"].(map[string]any)["sessionId"].(string)
	sj, _ := json.Marshal(sid)
	fmt.Fprintf(s.out, "   client → session/prompt \"Say hello\"\n")
	send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":` + string(sj) + `,"prompt":[{"type":"text","text":"Say hello"}]}}`)
	m, err = await(2)
	if err != nil {
		return err
	}
	describeResponse(s.out, m)
	pw.Close()
	_, _ = io.Copy(io.Discard, pr) // until the proxy closes its output
	return <-done
}

func describeUpdate(w io.Writer, m map[string]any) {
	p, _ := m["params"].(map[string]any)
	u, _ := p["update"].(map[string]any)
	kind, _ := u["sessionUpdate"].(string)
	text := ""
	if c, ok := u["content"].(map[string]any); ok {
		text, _ = c["text"].(string)
	}
	switch kind {
	case "agent_message_chunk":
		if meta, ok := u["_meta"].(map[string]any); ok && meta["acpGuard"] != nil {
			fmt.Fprintf(w, "   agent says (compaction turn): %q\n", text)
			return
		}
		fmt.Fprintf(w, "   agent says: %q\n", text)
	case "agent_thought_chunk":
		if meta, ok := u["_meta"].(map[string]any); ok && meta["acpGuard"] != nil {
			fmt.Fprintf(w, "   ⟳ acp-guard notice: %s%s\n", strings.TrimSpace(text), drawnDelay(meta["acpGuard"]))
			return
		}
		fmt.Fprintf(w, "   agent thinks: %q\n", text)
	case "tool_call", "tool_call_update":
		fmt.Fprintf(w, "   %s: %v (%v)\n", kind, u["title"], u["status"])
	default:
		fmt.Fprintf(w, "   update: %s\n", kind)
	}
}

func describeResponse(w io.Writer, m map[string]any) {
	if r, ok := m["result"].(map[string]any); ok {
		fmt.Fprintf(w, "   ✔ prompt result: stopReason=%v", r["stopReason"])
		if meta, ok := r["_meta"].(map[string]any); ok {
			b, _ := json.Marshal(meta)
			fmt.Fprintf(w, " _meta=%s", b)
		}
		fmt.Fprintln(w)
		return
	}
	e, _ := m["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	pe, ok := data["providerError"].(map[string]any)
	if !ok {
		fmt.Fprintf(w, "   ✘ prompt error %v: %v\n", e["code"], e["message"])
		return
	}
	// The verdict and what the provider said first; the JSON-RPC message
	// (an agent's own, or a signature's fixed diagnostic) after them.
	rec, _ := pe["recovery"].(map[string]any)
	fmt.Fprintf(w, "   ✘ prompt failed — providerError: code=%v class=%v confidence=%v rule=%v\n", pe["code"], pe["class"], pe["confidence"], pe["rule"])
	fmt.Fprintf(w, "     safeExcerpt=%q\n", pe["safeExcerpt"])
	ev, _ := json.Marshal(pe["evidence"])
	fmt.Fprintf(w, "     replaySafe=%v evidence=%s recovery=%v/%v\n", pe["replaySafe"], ev, rec["action"], rec["reason"])
	fmt.Fprintf(w, "     JSON-RPC error %v: %v\n", e["code"], e["message"])
}

// drawnDelay is a retry notice's drawn delay (_meta.acpGuard.retry.delayMs)
// when its text rounds it ("retrying in 1s" for 1.4 s).
func drawnDelay(meta any) string {
	ag, _ := meta.(map[string]any)
	r, _ := ag["retry"].(map[string]any)
	ms, ok := r["delayMs"].(float64)
	if !ok || ms < 1000 || int64(ms)%1000 == 0 {
		return ""
	}
	return fmt.Sprintf(" [drawn: %.3fs]", ms/1000)
}

// checkScenarios refuses scenario names the demo agent does not know,
// listing the ones it does.
func checkScenarios(names []string) error {
	var known []string
	for _, sc := range demoagent.Scenarios() {
		known = append(known, sc.Name)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return fmt.Errorf("demo: unknown scenario %q; scenarios are: %s", n, strings.Join(known, ", "))
		}
	}
	return nil
}
