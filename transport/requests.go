package transport

import (
	"strconv"
	"time"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// Origin says who sent a request.
type Origin uint8

const (
	FromClient Origin = iota // client → agent
	FromAgent                // agent → client
	FromProxy                // acp-guard's own request to the agent
)

// ProxyIDPrefix reserves a namespace of string ids for acp-guard's own
// requests to the agent. Responses with such ids are consumed by the proxy
// and never reach the client.
const ProxyIDPrefix = "acp-guard:"

// Request is an entry of the request table.
type Request struct {
	Origin    Origin
	Method    string
	ID        []byte // raw id as its sender wrote it (copied)
	Key       IDKey
	SessionID string // params.sessionId, when there is one
	Seq       uint64 // arrival order
	At        time.Time
	// Params is the raw params, kept only for methods that a hook asked to
	// retain (session/prompt, so it can be sent again): a copy, or, for a
	// long line, the params span of the line itself, in its mapping (the
	// line is held once). Never modified; whoever keeps Params keeps the
	// Request (the mapping lives as long as keep is referenced).
	Params []byte
	keep   *lineArea // the mapping Params lives in, for a long line
	// Tag belongs to the hooks (e.g. the turn a prompt belongs to).
	Tag any
	// answered: the peer's response has arrived (the proxy may hold it).
	answered bool
}

// requestTable tracks requests in flight in each direction.
type requestTable struct {
	seq     uint64
	client  map[IDKey]*Request // client → agent, awaiting the agent's response
	agent   map[IDKey]*Request // agent → client, awaiting the client's response
	proxy   map[IDKey]*Request // proxy → agent
	proxyID uint64
}

func newRequestTable() *requestTable {
	return &requestTable{
		client: make(map[IDKey]*Request),
		agent:  make(map[IDKey]*Request),
		proxy:  make(map[IDKey]*Request),
	}
}

// add enters a new request; params is what the request keeps as its
// Params (owned by it from now on; nil: nothing).
func (t *requestTable) add(origin Origin, m *Msg, now time.Time, params []byte) (*Request, bool) {
	t.seq++
	r := &Request{
		Origin: origin,
		Method: m.Method,
		ID:     append([]byte(nil), m.ID...),
		Key:    KeyOf(m.ID),
		Seq:    t.seq,
		At:     now,
		Params: params,
	}
	if m.Params != nil {
		if s, ok := jsonscan.String(jsonscan.Get(m.Params, "sessionId")); ok {
			r.SessionID = s
		}
	}
	tbl := t.client
	if origin == FromAgent {
		tbl = t.agent
	}
	_, dup := tbl[r.Key]
	tbl[r.Key] = r
	return r, dup
}

func (t *requestTable) newProxy(method string, sessionID string, now time.Time) *Request {
	t.seq++
	t.proxyID++
	id := strconv.AppendQuote(nil, ProxyIDPrefix+strconv.FormatUint(t.proxyID, 10))
	r := &Request{Origin: FromProxy, Method: method, ID: id, Key: KeyOf(id), SessionID: sessionID, Seq: t.seq, At: now}
	t.proxy[r.Key] = r
	return r
}

// pendingClient returns the client requests still awaiting an answer, in
// arrival order.
func (t *requestTable) pendingClient() []*Request {
	out := make([]*Request, 0, len(t.client))
	for _, r := range t.client {
		out = append(out, r)
	}
	for i := 1; i < len(out); i++ { // insertion sort: tables are small
		for j := i; j > 0 && out[j].Seq < out[j-1].Seq; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
