package guard_test

import (
	"encoding/base64"
	"testing"

	"github.com/acp-guard/acp-guard/policy"
)

func TestE2EProbeDupResponse(t *testing.T) {
	doc := policy.Default()
	doc.Transient = policy.ClassPolicy{Retry: policy.Retry{Enabled: true, MaxRetries: 3, InitialIntervalSeconds: 1}, OnExhausted: policy.OutcomeStop}
	p := startInProc(t, doc, "--scenario", "fail-then-succeed", "--fail", "1", "--agent-name", "codex-acp")
	p.send(e2eInit, e2eNew)
	p.until("1")
	p.until("2")
	p.send(e2ePrompt(3, "sess-1"))
	var frames []e2eFrame
	for len(retryNotices(t, frames)) == 0 {
		f, _ := p.next()
		frames = append(frames, f)
	}
	dup := `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error","data":{"message":"stream disconnected before completion: x"}}}`
	p.send(`{"jsonrpc":"2.0","method":"test/echo","params":{"payload":"` + base64.StdEncoding.EncodeToString([]byte(dup)) + `"}}` + "\n")
	frames = append(frames, p.until("3")...)
	frames = append(frames, p.finish()...)
	for _, f := range frames {
		t.Logf("%s", f.raw)
	}
}
