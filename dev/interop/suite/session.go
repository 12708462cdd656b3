package suite

import (
	"context"
	"encoding/json"
	"fmt"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/internal/acptest"
	acp "github.com/coder/acp-go-sdk"
)

// Initialize sends initialize (no fs, no terminal) and returns the
// response; an error response is an error.
func (c *Client) Initialize(ctx context.Context) (Frame, error) {
	f, err := c.Call(ctx, acp.AgentMethodInitialize, map[string]any{
		"protocolVersion": acp.ProtocolVersionNumber,
		"clientCapabilities": map[string]any{
			"fs":       map[string]any{"readTextFile": false, "writeTextFile": false},
			"terminal": false,
		},
		"clientInfo": map[string]any{"name": "acp-guard-interop", "version": "0.1.0"},
	})
	return f, failed(f, err)
}

// Authenticate sends authenticate with methodID.
func (c *Client) Authenticate(ctx context.Context, methodID string) error {
	f, err := c.Call(ctx, acp.AgentMethodAuthenticate, map[string]any{"methodId": methodID})
	return failed(f, err)
}

// NewSession opens a session in cwd and returns its id and the response.
func (c *Client) NewSession(ctx context.Context, cwd string) (string, Frame, error) {
	f, err := c.Call(ctx, acp.AgentMethodSessionNew, map[string]any{"cwd": cwd, "mcpServers": []any{}})
	if err := failed(f, err); err != nil {
		return "", f, err
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(f.Result, &r); err != nil || r.SessionID == "" {
		return "", f, fmt.Errorf("suite: session/new result without sessionId: %s", f.Raw)
	}
	return r.SessionID, f, nil
}

func failed(f Frame, err error) error {
	if err != nil {
		return err
	}
	if f.Error != nil {
		return fmt.Errorf("suite: %s", f.Raw)
	}
	return nil
}

// Pending is a session/prompt in flight.
type Pending struct {
	ID      int
	Session string
	Mark    int // frames before the request
}

// StartPrompt sends session/prompt with one text block.
func (c *Client) StartPrompt(session, text string) (Pending, error) {
	mark := c.Mark()
	id, err := c.Send(acp.AgentMethodSessionPrompt, map[string]any{
		"sessionId": session,
		"prompt":    []any{map[string]any{"type": "text", "text": text}},
	})
	return Pending{ID: id, Session: session, Mark: mark}, err
}

// Finish waits for the prompt's response and returns the turn.
func (c *Client) Finish(ctx context.Context, p Pending) (Turn, error) {
	resp, err := c.Response(ctx, p.ID)
	if err != nil {
		return Turn{}, err
	}
	t := Turn{Session: p.Session, Response: resp}
	for _, f := range c.Frames(p.Mark) {
		if f.IsResponse() {
			if string(f.ID) == string(resp.ID) {
				t.Responses++
			}
			continue
		}
		if f.Method == acp.ClientMethodSessionUpdate && sessionOf(f) == p.Session {
			t.Updates = append(t.Updates, f)
		}
	}
	return t, nil
}

// Prompt runs one turn.
func (c *Client) Prompt(ctx context.Context, session, text string) (Turn, error) {
	p, err := c.StartPrompt(session, text)
	if err != nil {
		return Turn{}, err
	}
	return c.Finish(ctx, p)
}

// Cancel sends session/cancel.
func (c *Client) Cancel(session string) error {
	return c.Notify(acp.AgentMethodSessionCancel, map[string]any{"sessionId": session})
}

func sessionOf(f Frame) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(f.Params, &p)
	return p.SessionID
}

// IsRetryNotice reports whether a frame is an acp-guard retry notice.
func IsRetryNotice(f Frame) bool {
	_, ok := noticeOf(f)
	return ok
}

// Notice is the machine-readable part of a retry notice
// (update._meta.acpGuard.retry).
type Notice struct {
	Attempt    int    `json:"attempt"`
	MaxRetries int    `json:"maxRetries"`
	DelayMs    int64  `json:"delayMs"`
	Deadline   string `json:"deadline"`
	Code       string `json:"code"`
	Class      string `json:"class"`
	Action     string `json:"action"` // retry, wait_for_reset, compact, switch
	Rule       string `json:"rule"`
	Model      string `json:"model"` // the model switched to (action switch)
}

func noticeOf(f Frame) (Notice, bool) {
	if f.Method != acp.ClientMethodSessionUpdate {
		return Notice{}, false
	}
	var p struct {
		Update struct {
			Meta struct {
				AcpGuard struct {
					Retry *Notice `json:"retry"`
				} `json:"acpGuard"`
			} `json:"_meta"`
		} `json:"update"`
	}
	if json.Unmarshal(f.Params, &p) != nil || p.Update.Meta.AcpGuard.Retry == nil {
		return Notice{}, false
	}
	return *p.Update.Meta.AcpGuard.Retry, true
}

// Turn is one session/prompt as the client saw it.
type Turn struct {
	Session   string
	Response  Frame
	Responses int     // responses with the prompt's id (exactly 1 when correct)
	Updates   []Frame // session/update notifications of the session up to the response
}

// Model returns the result's _meta.acpGuard.model: the model that
// answered after acp-guard switched models ("" when it did not).
func (t Turn) Model() string {
	var r struct {
		Meta struct {
			AcpGuard struct {
				Model string `json:"model"`
			} `json:"acpGuard"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(t.Response.Result, &r)
	return r.Meta.AcpGuard.Model
}

// StopReason returns the result's stopReason ("" for an error).
func (t Turn) StopReason() string {
	var r struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(t.Response.Result, &r)
	return r.StopReason
}

// RPCError is the JSON-RPC error of a failed turn.
type RPCError = acptest.Error

// Err returns the turn's JSON-RPC error, or nil.
func (t Turn) Err() *RPCError { return t.Response.Error }

// ProviderError returns error.data.providerError, or nil.
func (t Turn) ProviderError() *acpguard.ProviderError {
	e := t.Err()
	if e == nil || len(e.Data) == 0 {
		return nil
	}
	var d struct {
		ProviderError *acpguard.ProviderError `json:"providerError"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return nil
	}
	return d.ProviderError
}

// Kinds returns the sessionUpdate kind of every update, in order; retry
// notices are reported as "acp-guard-notice".
func (t Turn) Kinds() []string {
	var k []string
	for _, f := range t.Updates {
		if IsRetryNotice(f) {
			k = append(k, "acp-guard-notice")
			continue
		}
		k = append(k, updateKind(f))
	}
	return k
}

func updateKind(f Frame) string {
	var p struct {
		Update struct {
			Kind string `json:"sessionUpdate"`
		} `json:"update"`
	}
	_ = json.Unmarshal(f.Params, &p)
	return p.Update.Kind
}

// Text returns the text of the turn's agent_message_chunk updates, retry
// notices left out.
func (t Turn) Text() string {
	var s string
	for _, f := range t.Updates {
		if IsRetryNotice(f) || updateKind(f) != "agent_message_chunk" {
			continue
		}
		var p struct {
			Update struct {
				Content struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		if json.Unmarshal(f.Params, &p) == nil && p.Update.Content.Type == "text" {
			s += p.Update.Content.Text
		}
	}
	return s
}

// Notices returns the turn's retry notices.
func (t Turn) Notices() []Notice {
	var n []Notice
	for _, f := range t.Updates {
		if v, ok := noticeOf(f); ok {
			n = append(n, v)
		}
	}
	return n
}
