package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Turn is what one request cost: the lines and bytes the client read up to
// and including the response, and the time from writing the request to
// reading the end of the response.
type Turn struct {
	Frames  int64
	Bytes   int64
	Elapsed time.Duration
	// Hops are the agent's round trips within the turn: from the client
	// writing its answer to one agent request to reading the agent's next
	// request (the pingpong workload); none when the agent makes fewer than
	// two requests.
	Hops []time.Duration
}

// Client is a minimal ACP client for measuring: it writes requests as single
// writes and reads lines without decoding notifications. It is not safe for
// concurrent use.
type Client struct {
	w         io.Writer
	r         *bufio.Reader
	nextID    int64
	sessionID string
	prompt    []byte // params of every session/prompt
	line      []byte // scratch for lines that need a look
	now       func() time.Time
	answered  time.Time // when the last agent request of this turn was answered
}

// clientBufSize is the read buffer. Lines longer than it are counted in
// pieces and never held whole unless they need decoding.
const clientBufSize = 256 << 10

// NewClient returns a client writing requests to w and reading frames from r.
func NewClient(w io.Writer, r io.Reader) *Client {
	return &Client{w: w, r: bufio.NewReaderSize(r, clientBufSize), now: time.Now}
}

// notificationPrefix is how every session/update from the demo agent
// starts (encoding/json writes fields in struct order). A line with this
// prefix is counted and skipped without a look at the rest.
var notificationPrefix = []byte(`{"jsonrpc":"2.0","method":"` + acp.ClientMethodSessionUpdate + `"`)

// Handshake sends initialize and session/new and keeps the session id for
// Prompt.
func (c *Client) Handshake() error {
	init := `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":false},"terminal":false}}`
	if _, _, err := c.Call(acp.AgentMethodInitialize, []byte(init)); err != nil {
		return err
	}
	_, resp, err := c.Call(acp.AgentMethodSessionNew, []byte(`{"cwd":"/","mcpServers":[]}`))
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if err := json.Unmarshal(resp, &r); err != nil || r.Result.SessionID == "" {
		return fmt.Errorf("session/new: no sessionId in %q", resp)
	}
	c.sessionID = r.Result.SessionID
	params, _ := json.Marshal(map[string]any{
		"sessionId": c.sessionID,
		"prompt":    []map[string]string{{"type": "text", "text": "go"}},
	})
	c.prompt = params
	return nil
}

// Prompt sends one session/prompt in the session opened by Handshake and
// reads until its response, which must be a result.
func (c *Client) Prompt() (Turn, error) {
	if c.prompt == nil {
		return Turn{}, errors.New("prompt before handshake")
	}
	t, _, err := c.Call(acp.AgentMethodSessionPrompt, c.prompt)
	return t, err
}

// Call writes one request and reads lines until the response with its id.
// It returns the response line (without its terminator); a JSON-RPC error
// response is returned as an error.
func (c *Client) Call(method string, params []byte) (Turn, []byte, error) {
	c.nextID++
	id := strconv.AppendInt(nil, c.nextID, 10)
	req := make([]byte, 0, 64+len(method)+len(params))
	req = append(req, `{"jsonrpc":"2.0","id":`...)
	req = append(req, id...)
	req = append(req, `,"method":`...)
	req = strconv.AppendQuote(req, method)
	req = append(req, `,"params":`...)
	req = append(req, params...)
	req = append(req, "}\n"...)
	// The fast check for the response: the demo agent (through any relay
	// that keeps bytes) writes responses as {"jsonrpc":"2.0","id":N,...}.
	respPrefix := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), ',')

	c.answered = time.Time{}
	start := c.now()
	if _, err := c.w.Write(req); err != nil {
		return Turn{}, nil, fmt.Errorf("%s: write: %w", method, err)
	}
	var t Turn
	for {
		line, err := c.readLine(&t)
		if err != nil {
			return t, nil, fmt.Errorf("%s: read after %d frames: %w", method, t.Frames, err)
		}
		if line == nil {
			continue // a notification, counted
		}
		// An agent's request may carry the same id: a response has no method.
		fast := bytes.HasPrefix(line, respPrefix) && !bytes.HasPrefix(line[len(respPrefix):], []byte(`"method"`))
		if fast || responseID(line) == string(id) {
			t.Elapsed = c.now().Sub(start)
			return t, line, responseError(method, line)
		}
		if err := c.answerAgentRequest(line, &t); err != nil {
			return t, nil, err
		}
	}
}

// readLine reads one line, counting it in t. It returns nil for a
// session/update notification (not kept), else the line without its
// terminator, valid until the next call.
func (c *Client) readLine(t *Turn) ([]byte, error) {
	chunk, err := c.r.ReadSlice('\n')
	t.Bytes += int64(len(chunk))
	if err == nil {
		t.Frames++
		if bytes.HasPrefix(chunk, notificationPrefix) {
			return nil, nil
		}
		return bytes.TrimRight(chunk, "\r\n"), nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if err == io.EOF && len(chunk) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	// A line longer than the buffer: count it through, keeping it only if
	// it is not a notification.
	keep := !bytes.HasPrefix(chunk, notificationPrefix)
	c.line = append(c.line[:0], chunk...)
	for errors.Is(err, bufio.ErrBufferFull) {
		chunk, err = c.r.ReadSlice('\n')
		t.Bytes += int64(len(chunk))
		if keep {
			c.line = append(c.line, chunk...)
		}
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	t.Frames++
	if !keep {
		return nil, nil
	}
	return bytes.TrimRight(c.line, "\r\n"), nil
}

// responseID returns the raw id of a response line ("" for anything else).
func responseID(line []byte) string {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != nil {
		return ""
	}
	return string(m.ID)
}

func responseError(method string, line []byte) error {
	if !bytes.Contains(line, []byte(`"error"`)) {
		return nil
	}
	var m struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Error == nil {
		return nil
	}
	return fmt.Errorf("%s: error response %d: %s", method, m.Error.Code, m.Error.Message)
}

// answerAgentRequest answers a request from the agent: fs/read_text_file
// (the pingpong workload) with an empty file, anything else with a refusal,
// so that an unexpected request cannot stall the turn. The time since the
// last answer of the turn is one hop in t. Other lines (notifications of
// other kinds, stray responses) are ignored.
func (c *Client) answerAgentRequest(line []byte, t *Turn) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method == "" || len(m.ID) == 0 {
		return nil
	}
	now := c.now()
	if !c.answered.IsZero() {
		t.Hops = append(t.Hops, now.Sub(c.answered))
	}
	resp := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"bench client: method not supported"}}` + "\n"
	if m.Method == acp.ClientMethodFsReadTextFile {
		resp = `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":""}}` + "\n"
	}
	c.answered = now
	if _, err := io.WriteString(c.w, resp); err != nil {
		return fmt.Errorf("answer %s: %w", m.Method, err)
	}
	return nil
}
