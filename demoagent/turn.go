package demoagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// turn is one session/prompt in flight. Its goroutine is the only writer of
// the turn's updates and of its response.
type turn struct {
	a         *agent
	ctx       context.Context // done on session/cancel or agent shutdown
	cancel    context.CancelFunc
	id        json.RawMessage
	sessionID string
	n         int    // 1-based number of this prompt in the process
	model     string // session model when the prompt arrived
	sent      int    // updates sent so far
	text      string // the prompt's text blocks, joined
}

func (a *agent) startTurn(m *inbound) {
	var p struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Text string `json:"text"`
		} `json:"prompt"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: "+err.Error())
		return
	}
	model, ok := a.model(p.SessionID)
	if !ok {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: unknown session "+p.SessionID)
		return
	}
	ctx, cancel := context.WithCancel(a.ctx)
	t := &turn{a: a, ctx: ctx, cancel: cancel, id: m.ID, sessionID: p.SessionID, model: model}
	for _, b := range p.Prompt {
		t.text += b.Text
	}
	a.mu.Lock()
	a.prompts++
	t.n = a.prompts
	if a.cancels[p.SessionID] == nil {
		a.cancels[p.SessionID] = make(map[*turn]struct{})
	}
	a.cancels[p.SessionID][t] = struct{}{}
	a.mu.Unlock()
	a.turns.Add(1)
	// Run waits for the turn (a.turns) unless the script exits the process;
	// the turn ends when its script returns, which every script does
	// promptly once t.ctx is done.
	go a.runTurn(t)
}

func (a *agent) runTurn(t *turn) {
	defer a.turns.Done()
	defer func() {
		t.cancel()
		a.mu.Lock()
		delete(a.cancels[t.sessionID], t)
		a.mu.Unlock()
	}()
	err := a.sc.prompt(t)
	var exitErr *ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		select {
		case a.exit <- exitErr:
		default:
		}
	case t.ctx.Err() != nil:
		if a.ctx.Err() == nil { // cancelled by the client, not shutting down
			t.end(acp.StopReasonCancelled)
		}
	default:
		a.logf("prompt %d: %v", t.n, err)
	}
}

func (a *agent) cancelSession(sessionID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for t := range a.cancels[sessionID] {
		t.cancel()
	}
}

// pause waits for the configured delay between chunks; it fails when the turn
// is cancelled.
func (t *turn) pause() error {
	if err := t.ctx.Err(); err != nil {
		return err
	}
	d := t.a.opts.Delay
	if d <= 0 || t.sent == 0 {
		return nil
	}
	// What the turn wrote so far is visible during the pause.
	if err := t.a.w.flush(); err != nil {
		return err
	}
	return t.sleep(d)
}

// sleep waits d; it fails when the turn is cancelled first.
func (t *turn) sleep(d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
}

// raw writes a frame (any bytes ending in '\n') as the turn's next chunk.
func (t *turn) raw(frame []byte) error {
	if err := t.pause(); err != nil {
		return err
	}
	t.sent++
	return t.a.w.write(frame, true)
}

// update sends an SDK-built update (tool calls).
func (t *turn) update(u acp.SessionUpdate) error {
	return t.raw(updateLine(t.sessionID, u))
}

func (t *turn) message(text string) error {
	return t.raw(textLine(t.sessionID, updateMessageChunk, text))
}

func (t *turn) thought(text string) error {
	return t.raw(textLine(t.sessionID, updateThoughtChunk, text))
}

// end answers the prompt with reason.
func (t *turn) end(reason acp.StopReason) error {
	return t.a.w.write(resultLine(t.id, promptResult(reason)), true)
}

// endTurn pauses like between chunks, then answers end_turn.
func (t *turn) endTurn() error {
	if err := t.pause(); err != nil {
		return err
	}
	return t.end(acp.StopReasonEndTurn)
}

// fail answers the prompt with a JSON-RPC error.
func (t *turn) fail(e *rpcError) error {
	if err := t.pause(); err != nil {
		return err
	}
	return t.a.w.write(errorLine(t.id, e), true)
}

// call sends a request to the client within the turn and waits for the answer.
func (t *turn) call(method string, params any) (*inbound, error) {
	if err := t.pause(); err != nil {
		return nil, err
	}
	t.sent++
	return t.a.call(t.ctx, method, params)
}

// paddedMessage builds an agent_message_chunk frame of size bytes, newline
// included, or the smallest such frame (one byte of text, about 150 bytes)
// when size is smaller. The padding needs no JSON escaping, so it is
// spliced into the encoded frame rather than encoded (a 20 MiB frame costs
// one 20 MiB buffer).
func paddedMessage(sessionID string, size int) []byte {
	base := textLine(sessionID, updateMessageChunk, "")
	marker := []byte(`"text":""`)
	at := bytes.LastIndex(base, marker) + len(marker) - 1 // at the closing quote
	n := max(size-len(base), 1)
	const pattern = "the quick brown fox jumps over the lazy dog "
	out := make([]byte, 0, len(base)+n)
	out = append(out, base[:at]...)
	for n > 0 {
		k := min(n, len(pattern))
		out = append(out, pattern[:k]...)
		n -= k
	}
	return append(out, base[at:]...)
}
