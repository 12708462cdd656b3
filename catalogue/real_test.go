package catalogue

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/observers"
)

// realExpect is what each captured failure must classify as, by
// "agent/scenario" or, failing that, by scenario. codex-acp hides the
// provider's 429 body behind its retry loop, so its quota and billing
// failures can only be seen as rate limits. An "agent/scenario" entry also
// says the capture is a failure: a turn of it that ends without an error
// (or a projected control chunk) is checked as the verdict "none".
var realExpect = map[string]string{
	"bad_gateway_502":        classify.CodeProviderUnavailable,
	"billing":                classify.CodeQuotaLimited,
	"codex/billing":          classify.CodeRateLimited,
	"gemini/billing":         classify.CodeSubscriptionRequired,
	"context_overflow":       classify.CodeContextOverflow,
	"drop_after_text":        classify.CodeAgentTransportLost,
	"drop_before_text":       classify.CodeAgentTransportLost,
	"forbidden_403":          classify.CodeAuthRequired,
	"codex/forbidden_403":    classify.CodeProviderNotConfigured,
	"model_not_found_404":    classify.CodeModelUnavailable,
	"overloaded":             classify.CodeProviderOverloaded,
	"quota":                  classify.CodeQuotaLimited,
	"codex/quota":            classify.CodeRateLimited,
	"rate_limit":             classify.CodeRateLimited,
	"rate_limit_retry_after": classify.CodeRateLimited,
	"server_error_500":       classify.CodeProviderUnavailable,
	"unavailable_503":        classify.CodeProviderUnavailable,
	"stall":                  classify.CodeAgentTransportLost,
	"stream_error":           classify.CodeAgentTransportLost,
	"text_then_error":        classify.CodeAgentTransportLost,
	// codex-acp reports the provider's in-stream error event as "stream
	// disconnected before completion: An error occurred while processing
	// your request." — OpenAI's server_error text: the provider failed, the
	// stream did not drop.
	"codex/stream_error":    classify.CodeProviderUnavailable,
	"codex/text_then_error": classify.CodeProviderUnavailable,
	"unauthorized_401":      classify.CodeAuthRequired,
	"api_key_invalid_400":   classify.CodeAuthRequired,
	"offline_dns":           classify.CodeNetworkUnavailable,
	"no_api_key":            classify.CodeMissingCredentials,
	"claude/no_api_key":     classify.CodeAuthRequired, // ACP's -32000 "Authentication required"
	"overloaded_529":        classify.CodeProviderOverloaded,

	// Cline CLI 3.0.65 hands over the provider's message alone,
	// without status or type.
	"cline/forbidden_403": classify.CodeProviderNotConfigured, // codex/forbidden_403's region text
	"cline/no_api_key":    classify.CodeAuthRequired,          // session/new: -32000 "Call authenticate"
	"cline/empty_answer":  classify.CodeEmptyResponse,
	"cline/empty_stream":  classify.CodeEmptyResponse,
	// Cline hands an in-stream error event over as "Type validation failed:
	// Value: {…}" with the event embedded: the provider's server_error, as
	// codex-acp's (above).
	"cline/stream_error":                 classify.CodeProviderUnavailable,
	"cline/text_then_error":              classify.CodeProviderUnavailable,
	"cline/text_then_error_then_success": classify.CodeProviderUnavailable, // not retried: the turn fails
	// Cline hands an in-stream error event over as "Type validation failed:
	// Value: {…}" with the event embedded: the provider's server_error, as
	// codex-acp's (above).

	// pi through pi-acp 0.0.34 relays no error: a failed turn
	// ends end_turn, with only pi's retry notes when pi retried. Every
	// failure is listed here by agent, which makes a turn without an error
	// a miss (see TestRealAgentCaptures).
	"pi/rate_limit":             classify.CodeRateLimited,
	"pi/rate_limit_retry_after": classify.CodeRateLimited,
	"pi/quota":                  classify.CodeQuotaLimited,
	"pi/billing":                classify.CodeQuotaLimited,
	"pi/server_error_500":       classify.CodeProviderUnavailable,
	"pi/bad_gateway_502":        classify.CodeProviderUnavailable,
	"pi/unavailable_503":        classify.CodeProviderUnavailable,
	"pi/overloaded":             classify.CodeProviderOverloaded,
	"pi/unauthorized_401":       classify.CodeAuthRequired,
	"pi/forbidden_403":          classify.CodeAuthRequired,
	"pi/model_not_found_404":    classify.CodeModelUnavailable,
	"pi/context_overflow":       classify.CodeContextOverflow,
	"pi/drop_before_text":       classify.CodeAgentTransportLost,
	"pi/drop_after_text":        classify.CodeAgentTransportLost,
	"pi/stream_error":           classify.CodeAgentTransportLost,
	"pi/text_then_error":        classify.CodeAgentTransportLost,
	"pi/stall":                  classify.CodeAgentTransportLost,
	"pi/offline_dns":            classify.CodeNetworkUnavailable,
	"pi/no_api_key":             classify.CodeAuthRequired, // session/new: ACP's -32000 "Authentication required: Configure an API key or log in…", as claude and cline

	// opencode 1.18.33 (`opencode acp`, Chat Completions) answers a failed
	// turn -32603 "Internal error: " + the provider's message, data
	// {"service":"session","errorName":…}: no status, as cline.
	"opencode/forbidden_403": classify.CodeProviderNotConfigured, // codex/forbidden_403's region text
	// The fake's Responses-shaped error event inside a Chat stream comes
	// back as "Type validation failed: Value: {…server_error…}", as cline's.
	"opencode/stream_error":    classify.CodeProviderUnavailable,
	"opencode/text_then_error": classify.CodeProviderUnavailable,
	// A stream without text ends end_turn with no chunk: the relay sees
	// no failure.
	"opencode/empty_answer": classify.CodeEmptyResponse,
	"opencode/empty_stream": classify.CodeEmptyResponse,
}

// knownMisses are captures of Cline CLI, pi (through pi-acp) and opencode that
// today's classifier reads wrong: key → the verdict it gives today ("none": the relay sees no failure at
// all). realExpect keeps what each failure means; the test logs these
// instead of failing, fails on any other wrong verdict, and fails when a
// listed capture comes out right, so the list only shrinks.
var knownMisses = map[string]string{
	"pi/bad_gateway_502":        noVerdict,
	"pi/billing":                noVerdict,
	"pi/context_overflow":       noVerdict,
	"pi/drop_after_text":        noVerdict,
	"pi/drop_before_text":       noVerdict,
	"pi/forbidden_403":          noVerdict,
	"pi/model_not_found_404":    noVerdict,
	"pi/offline_dns":            noVerdict,
	"pi/overloaded":             noVerdict,
	"pi/quota":                  noVerdict,
	"pi/rate_limit":             noVerdict,
	"pi/rate_limit_retry_after": noVerdict,
	"pi/server_error_500":       noVerdict,
	"pi/stall":                  noVerdict,
	"pi/stream_error":           noVerdict,
	"pi/text_then_error":        noVerdict,
	"pi/unauthorized_401":       noVerdict,
	"pi/unavailable_503":        noVerdict,
	// opencode 1.18.33 ends a stream without text end_turn with no chunk
	// and nothing on stderr: silent.
	"opencode/empty_answer": noVerdict,
	"opencode/empty_stream": noVerdict,
	// The provider's stream stalled and opencode's request timeout fired:
	// -32603 "Internal error: The operation timed out.", data errorName
	// "UnknownError" — read as the provider's timeout (phrase.timeout.v1).
	"opencode/stall": classify.CodeProviderUnavailable,
}

// projected returns the signature a chunk of adapter's is a control chunk
// or diagnostic of, or nil.
func projected(sigs []observers.ControlSignature, adapter, text string) *observers.ControlSignature {
	a := observers.NormalizeAdapter(adapter)
	for i := range sigs {
		if sigs[i].Match(a, text, true) {
			return &sigs[i]
		}
	}
	return nil
}

type transcriptEvent struct {
	Dir     string          `json:"dir"`
	Msg     json.RawMessage `json:"msg"`
	Adapter string          `json:"adapter"`
}

type rpcFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
			Content       struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"update"`
	} `json:"params"`
	Error *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
}

// turn is one session/prompt turn of a transcript as the relay sees it.
type turn struct {
	adapter string
	err     *classify.Evidence // nil when the prompt returned a result
	chunks  []string
}

func readTurns(t *testing.T, path string) []turn {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var turns []turn
	adapter := ""
	prompts := map[string]bool{}
	setup := map[string]bool{} // authenticate and session/new: a failure there is the turn's
	var cur *turn
	var stderr []string
	for sc.Scan() {
		var ev transcriptEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch ev.Dir {
		case "meta":
			adapter = ev.Adapter
		case "stderr":
			var line string
			json.Unmarshal(ev.Msg, &line)
			stderr = append(stderr, classify.StripANSI(line))
		case "c2a", "a2c":
			var fr rpcFrame
			if json.Unmarshal(ev.Msg, &fr) != nil {
				continue
			}
			if ev.Dir == "c2a" && fr.Method == "session/prompt" {
				prompts[string(fr.ID)] = true
				cur = &turn{adapter: adapter}
				stderr = nil
				continue
			}
			if ev.Dir == "c2a" && (fr.Method == "session/new" || fr.Method == "authenticate") {
				setup[string(fr.ID)] = true
				continue
			}
			if ev.Dir == "a2c" && fr.Method == "" && setup[string(fr.ID)] && fr.Error != nil {
				// The session never came: the failure stands for the turn.
				code := fr.Error.Code
				turns = append(turns, turn{adapter: adapter, err: &classify.Evidence{Source: classify.SourceRPCError,
					Adapter: adapter, RPCCode: &code, Message: fr.Error.Message, Data: fr.Error.Data, Stderr: stderr,
					Now: classify.DefaultFixtureNow}})
				continue
			}
			if cur == nil || ev.Dir != "a2c" {
				continue
			}
			if fr.Method == "session/update" && fr.Params.Update.SessionUpdate == "agent_message_chunk" {
				cur.chunks = append(cur.chunks, fr.Params.Update.Content.Text)
			}
			if fr.Method == "" && prompts[string(fr.ID)] {
				if fr.Error != nil {
					code := fr.Error.Code
					cur.err = &classify.Evidence{Source: classify.SourceRPCError, Adapter: adapter, RPCCode: &code,
						Message: fr.Error.Message, Data: fr.Error.Data, Stderr: stderr, Now: classify.DefaultFixtureNow}
				}
				turns = append(turns, *cur)
				cur = nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return turns
}

// TestRealAgentCaptures classifies every failed turn captured from the real
// agents (with the turn's stderr, as the relay sees it) and checks that
// successful turns' text never classifies.
func TestRealAgentCaptures(t *testing.T) {
	files, _ := filepath.Glob("../testdata/transcripts/real/*/*.jsonl")
	if len(files) == 0 {
		t.Skip("no real-agent captures in testdata/transcripts/real")
	}
	e := Default()
	sigs, missing := observers.Bind(observers.DefaultSignatures, func(rule string) (observers.ChunkRule, error) {
		cc, err := e.ControlChunk(rule)
		return observers.ChunkRule{Adapter: cc.Adapter, Prefix: cc.Prefix, Match: cc.Match}, err
	}, func(adapter, text string) bool {
		_, _, ok := e.ReportedFailure(classify.Evidence{Adapter: adapter, Message: text})
		return ok
	})
	if len(missing) > 0 {
		t.Fatal(missing)
	}
	failed, classified, passed := 0, 0, 0
	codes := map[string]int{}
	misses := &missLog{seen: map[string]bool{}}
	for _, path := range files {
		key := strings.TrimSuffix(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), ".jsonl")
		scenario := key[strings.IndexByte(key, '/')+1:]
		fileFailed := false
		for _, tr := range readTurns(t, path) {
			textFailure := projectText(t, e, sigs, key, &tr)
			want, scoped := realExpect[key]
			ok := scoped
			if !ok {
				want, ok = realExpect[scenario]
			}
			if tr.err == nil {
				// An agent-scoped expectation says the capture is a
				// failure: a turn that ends without one is a miss.
				if scoped {
					misses.check(t, key, noVerdict, want, "the turn ended without an error or a projected control chunk")
				}
				passed++
				continue
			}
			failed++
			fileFailed = true
			var v classify.Verdict
			if textFailure {
				v = e.ClassifyText(*tr.err)
			} else {
				v = e.Classify(*tr.err)
			}
			switch {
			case ok:
				misses.check(t, key, v.Code, want, fmt.Sprintf("rule %q, reason %q, conflicts %v", v.Rule, v.Reason, v.Conflicts))
			case v.Code == classify.CodeUnclassified:
				t.Errorf("%s: captured failure is unclassified (%q); add a rule and a fixture", key, v.SafeExcerpt)
			}
			if v.Code != classify.CodeUnclassified {
				classified++
			}
			codes[v.Code]++
			if len(v.SafeExcerpt) > classify.MaxExcerpt {
				t.Errorf("%s: excerpt of %d bytes", key, len(v.SafeExcerpt))
			}
		}
		// A failure scenario expected of every agent that no turn showed:
		// a projection lost it (agent-scoped expectations are checked
		// turn by turn above).
		_, scoped := realExpect[key]
		if _, expected := realExpect[scenario]; expected && !scoped && !fileFailed && !realPasses[key] &&
			!strings.HasSuffix(path, ".expected.jsonl") {
			t.Errorf("%s: the captured failure was not seen (no failed turn)", key)
		}
	}
	misses.finish(t)
	var summary []string
	for c, n := range codes {
		summary = append(summary, c+"="+strconv.Itoa(n))
	}
	sort.Strings(summary)
	t.Logf("real captures: %d files, %d failed turns (%d classified), %d passed turns untouched; %s",
		len(files), failed, classified, passed, strings.Join(summary, " "))
}

// projectText applies the text-reported failure projection to a turn the
// way the guard does: a control chunk of the adapter's signatures (Cursor's
// exact rule, Copilot's error chunk), else — for any adapter — a turn
// whose whole visible text is one error line the engine recognises or that
// carries a provider error shape; retry notes are diagnostics, not text.
// It sets tr.err for a text-reported failure of a turn that returned a
// result, and reports whether it did. Assistant text that is neither must
// never classify.
func projectText(t *testing.T, e *classify.Engine, sigs []observers.ControlSignature, key string, tr *turn) bool {
	t.Helper()
	var marker *observers.ControlSignature
	markerText, visible := "", ""
	for _, c := range tr.chunks {
		if sig := projected(sigs, tr.adapter, c); sig != nil {
			if sig.Kind != observers.KindDiagnostic {
				marker, markerText = sig, strings.TrimSpace(c)
			}
			continue
		}
		if _, ok := classify.ParseNote(c); ok && visible == "" {
			continue // a note before any output: a diagnostic
		}
		visible += c
		marker = nil // the agent resumed
	}
	if tr.err != nil {
		return false
	}
	switch {
	case marker != nil:
		tr.err = &classify.Evidence{Source: classify.SourceMessageChunk, Adapter: tr.adapter,
			Message: marker.EvidenceText(markerText), Now: classify.DefaultFixtureNow}
		return marker.ClassifyText
	case visible != "":
		ev := classify.Evidence{Adapter: tr.adapter, Message: visible, Now: classify.DefaultFixtureNow}
		if _, _, ok := e.ReportedFailure(ev); ok {
			tr.err = &ev
			return true
		}
		if v := e.ClassifyText(ev); v.Code != classify.CodeUnclassified {
			t.Errorf("%s: assistant text %q classified as %s by %s", key, visible, v.Code, v.Rule)
		}
	}
	return false
}

// realPasses are the captures of failure scenarios expected of every agent
// in which the agent did not fail (it ended the turn with an answer or
// nothing, or never returned before the capture cancelled it).
var realPasses = map[string]bool{
	"claude/drop_after_text":              true, // end_turn with the partial text
	"claude/drop_after_text_then_success": true,
	"claude/drop_before_text":             true, // an empty end_turn
	"claude/stream_error":                 true,
	"claude/text_then_error":              true,
	"claude/text_then_error_then_success": true,
	"codex/drop_after_text_then_success":  true,
	"codex/text_then_error_then_success":  true,
	"copilot/no_api_key":                  true, // Copilot used its own credentials
	"copilot/stall":                       true, // cancelled
	"kilo/offline_dns":                    true, // an empty end_turn after 300 s
	"qwen/offline_dns":                    true, // cancelled
	"qwen/quota":                          true,
	"qwen/rate_limit":                     true,
	"qwen/server_error_500":               true,
	"gemini/drop_after_text_then_success": true,
	"gemini/stall":                        true, // cancelled
	"gemini/stream_error":                 true, // an empty end_turn
	"gemini/text_then_error":              true, // end_turn with the partial text
	"gemini/no_api_key":                   true, // failed at session set-up
	"qwen/no_api_key":                     true, // failed at authenticate
	"cline/stall":                         true, // cancelled
	"opencode/no_api_key":                 true, // the key is optional for a custom provider and the fake provider does not check it
}

// noVerdict is the verdict of a failure the relay cannot see: the turn
// ended without an error and without a projected control chunk.
const noVerdict = "none"

// missLog checks verdicts against realExpect and knownMisses.
type missLog struct {
	seen  map[string]bool
	known int
}

// check compares a capture's verdict with what it means. A wrong verdict
// fails the test unless knownMisses lists exactly that verdict for the
// capture; a listed capture that is now right fails it too, so that the
// list only shrinks.
func (m *missLog) check(t *testing.T, key, got, want, detail string) {
	t.Helper()
	listed, isListed := knownMisses[key]
	if isListed {
		m.seen[key] = true
	}
	switch {
	case got == want && isListed:
		t.Errorf("%s: now %s as it should be; remove it from knownMisses", key, got)
	case got == want:
	case isListed && listed == got:
		m.known++
		t.Logf("known miss %s: got %s, want %s (%s)", key, got, want, detail)
	case isListed:
		t.Errorf("%s: got %s (%s), want %s; knownMisses says %s", key, got, detail, want, listed)
	default:
		t.Errorf("%s: got %s (%s), want %s", key, got, detail, want)
	}
}

func (m *missLog) finish(t *testing.T) {
	t.Helper()
	for key := range knownMisses {
		if !m.seen[key] {
			t.Errorf("knownMisses lists %s, which no capture checked", key)
		}
	}
	if m.known > 0 {
		t.Logf("%d known misses (knownMisses) of %d listed", m.known, len(knownMisses))
	}
}
