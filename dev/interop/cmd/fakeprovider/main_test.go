package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/dev/interop/fakeprovider"
)

func TestRunServesScriptAndPrintsStats(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.json")
	if err := os.WriteFile(script, []byte(`{"responses":[{"status":429,"body":{"error":{"message":"x"}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		code := run(ctx, []string{"-script", script, "-url-file", filepath.Join(dir, "url")}, pw, io.Discard)
		pw.Close()
		done <- code
	}()
	out := bufio.NewReader(pr)
	url, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url = strings.TrimSpace(url)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url: got %q, want http://127.0.0.1:PORT", url)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "url")); strings.TrimSpace(string(b)) != url {
		t.Errorf("url file: got %q, want %q", b, url)
	}
	resp, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-5"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, 429; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}
	cancel()
	var st fakeprovider.Stats
	if err := json.NewDecoder(out).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != 0 {
		t.Errorf("exit: got %d, want 0", got)
	}
	if got, want := st.Routes["responses"], 1; got != want {
		t.Errorf("stats responses: got %d, want %d", got, want)
	}
}

func TestLoadScript(t *testing.T) {
	if _, err := loadScript("", `{"x":[{"then":"nope"}]}`); err == nil || !strings.Contains(err.Error(), "x[0]") {
		t.Errorf("bad env script: got %v, want an error naming x[0]", err)
	}
	if s, err := loadScript("", ""); err != nil || s != nil {
		t.Errorf("no script: got %v %v, want nil nil", s, err)
	}
}
