package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// Secrets and personal data a user or provider may put on the wire.
var (
	leakEmail   = "ops.lead@example.com"
	leakGitHub  = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
	leakSlack   = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy"
	leakAWS     = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	leakAWSID   = "AKIAIOSFODNN7EXAMPLE"
	leakOrg     = "org-AbCdEf1234567890GhIjKlMn"
	leakAccount = "acct_1032D82eZvKYlo2C"
	leaks       = []string{leakEmail, leakGitHub, leakSlack, leakAWS, leakAWSID, leakOrg, leakAccount}
	keepURL     = "https://example.com/docs?page=2"
)

const leakText = "mail ops.lead@example.com, tokens ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy, " +
	"aws AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, org-AbCdEf1234567890GhIjKlMn acct_1032D82eZvKYlo2C, see https://example.com/docs?page=2"

// A --record transcript keeps session ids and URLs (it must replay) but
// never secrets, emails or account ids; a debug log never holds them
// either.
func TestE2ERedactionInTranscriptAndLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec, logFile := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "acp-guard.log")
	p := startBin(t, nil, proxy(t, []string{"--record", rec, "--log-file", logFile, "--log-level", "debug"}, "--scenario", "success")...)
	p.TrySend(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("2")
	p.TrySend("not json: "+leakText+"\n",
		acptest.Request(3, "session/prompt", `{"sessionId":"sess-1","prompt":[{"type":"text","text":"`+leakText+`"}]}`))
	p.Until("3")
	if _, code := p.Finish(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.Stderr.String())
	}
	transcript, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"transcript": string(transcript), "log": string(logs)} {
		for _, leak := range leaks {
			if strings.Contains(data, leak) {
				t.Errorf("%s holds %q:\n%s", name, leak, data)
			}
		}
	}
	for _, keep := range []string{`"sessionId":"sess-1"`, keepURL} {
		if !strings.Contains(string(transcript), keep) {
			t.Errorf("transcript lost %q:\n%s", keep, transcript)
		}
	}
	if !strings.Contains(string(logs), "not JSON") {
		t.Errorf("log has no debug line for the non-JSON frame:\n%s", logs)
	}
}
