package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// startupWindow bounds how long acp-guard, stopped by a configuration
// error, waits for the client's first request to answer it. It is a bound
// for a client that sends nothing, not a pause: a request already sent is
// answered at once.
const startupWindow = 2 * time.Second

// maxStartupLine bounds one client line read while answering a startup
// error (an initialize request is a few hundred bytes).
const maxStartupLine = 1 << 20

// failStartup reports a configuration error that stops acp-guard before the
// agent starts (policy, catalogue, log file, record path, flag values): on
// stderr, and — since an editor sees only stdout — as a JSON-RPC error
// answering the client's first request (normally initialize), as a missing
// agent is answered. Then acp-guard exits 2.
func failStartup(s *streams, err error) error {
	fmt.Fprintf(s.err, "acp-guard: %v\n", err)
	answerStartup(s.in, s.out, err.Error(), startupWindow)
	return withCode(exitUsage, errSilent)
}

// startupReply is the error answering a request when configuration failed.
type startupReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			AcpGuard struct {
				ConfigError string `json:"configError"`
			} `json:"acpGuard"`
		} `json:"data"`
	} `json:"error"`
}

// answerStartup answers the first request read from in within window with
// a JSON-RPC error naming the problem; notifications are skipped. The
// reading goroutine is not waited for: it may block on a stdin that stays
// open, and the process exits under it.
func answerStartup(in io.Reader, out io.Writer, problem string, window time.Duration) {
	ids := make(chan json.RawMessage, 1)
	go func() {
		defer close(ids)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 4096), maxStartupLine)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" {
				ids <- m.ID
				return
			}
		}
	}()
	timer := time.NewTimer(window)
	defer timer.Stop()
	select {
	case id, ok := <-ids:
		if !ok {
			return // the client closed its input without a request
		}
		var r startupReply
		r.JSONRPC, r.ID = "2.0", id
		r.Error.Code = -32603
		r.Error.Message = "acp-guard: configuration error: " + joinLines(problem, maxStartupMessage)
		r.Error.Data.AcpGuard.ConfigError = problem
		line, _ := json.Marshal(r)
		_, _ = out.Write(append(line, '\n'))
	case <-timer.C:
	}
}

// maxStartupMessage bounds the error message; data.acpGuard.configError
// holds the whole text.
const maxStartupMessage = 1024

// joinLines joins a multi-line problem ("--policy f:\nerr1\nerr2") into
// one bounded line ("--policy f: err1; err2").
func joinLines(problem string, max int) string {
	s := strings.ReplaceAll(strings.TrimSpace(problem), ":\n", ": ")
	return oneLine(strings.ReplaceAll(s, "\n", "; "), max)
}
