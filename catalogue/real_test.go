package catalogue

import (
	"bufio"
	"encoding/json"
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
// failures can only be seen as rate limits.
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
}

// realPasses are the captures of failure scenarios in which the agent did
// not fail (it ended the turn with an answer, or never returned before the
// capture cancelled it): no failed turn is expected there.
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
		if _, ok := classify.ParseNote(c); ok {
			continue
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
	for _, path := range files {
		key := strings.TrimSuffix(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), ".jsonl")
		scenario := key[strings.IndexByte(key, '/')+1:]
		fileFailed := false
		for _, tr := range readTurns(t, path) {
			textFailure := projectText(t, e, sigs, key, &tr)
			if tr.err == nil {
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
			want, ok := realExpect[key]
			if !ok {
				want, ok = realExpect[scenario]
			}
			switch {
			case ok && v.Code != want:
				t.Errorf("%s: got %s (rule %q, reason %q, conflicts %v), want %s", key, v.Code, v.Rule, v.Reason, v.Conflicts, want)
			case !ok && v.Code == classify.CodeUnclassified:
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
		_, expected := realExpect[scenario]
		if strings.HasSuffix(path, ".expected.jsonl") || realPasses[key] {
			expected = false
		}
		if expected && !fileFailed {
			t.Errorf("%s: the captured failure was not seen (no failed turn): a projection lost it", key)
		}
	}
	var summary []string
	for c, n := range codes {
		summary = append(summary, c+"="+strconv.Itoa(n))
	}
	sort.Strings(summary)
	t.Logf("real captures: %d files, %d failed turns (%d classified), %d passed turns untouched; %s",
		len(files), failed, classified, passed, strings.Join(summary, " "))
}
