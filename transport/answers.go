package transport

import "bytes"

// At most one answer per request, none unasked. The relay knows every
// request in flight in both directions (the request table), so it can tell
// an answer that is owed from one that is not:
//
//   - a second answer to a request already answered (a duplicate), and
//   - an answer to an id that was never sent, or is no longer pending (a
//     stray),
//
// are dropped — never delivered — counted (Counts.Duplicate… and
// Counts.Stray…), logged at warn and kept in the transcript as suppressed
// frames. That holds for the agent's answers to the client's requests and
// for the client's answers to the agent's requests. Two kinds of answer
// are not faults and are dropped more quietly: the agent's late answer to
// a request the proxy already answered itself (Relay.early; logged at
// info), and a client's answer to a request of an agent that has exited.
// An error response whose id is null answers no request (JSON-RPC's reply
// to a frame whose id could not be read) and is passed on.
//
// To tell a duplicate from a stray, the relay remembers the keys of the
// last recentAnswers answered requests in each direction; a second answer
// to an older one is counted as a stray. Both are dropped alike.

// recentAnswers bounds the answered ids remembered per direction.
const recentAnswers = 1024

// recentKeys is a bounded multiset of the latest keys added.
type recentKeys struct {
	ring []IDKey
	next int
	n    map[IDKey]int
}

func (s *recentKeys) add(k IDKey) {
	if s.n == nil {
		s.n = make(map[IDKey]int)
		s.ring = make([]IDKey, 0, 16)
	}
	if len(s.ring) < recentAnswers {
		s.ring = append(s.ring, k)
	} else {
		old := s.ring[s.next]
		if s.n[old]--; s.n[old] <= 0 {
			delete(s.n, old)
		}
		s.ring[s.next] = k
		s.next = (s.next + 1) % recentAnswers
	}
	s.n[k]++
}

func (s *recentKeys) has(k IDKey) bool { return s.n[k] > 0 }

// nullID reports whether a raw id is JSON null.
func nullID(id []byte) bool { return bytes.Equal(bytes.TrimSpace(id), []byte("null")) }

// agentAnswer finds the pending client request an agent response answers
// (m is not an answer to a request of the proxy's own: the caller handled
// those). ok is false when the response was dropped: a late answer to a
// request the proxy answered, a duplicate or a stray. A null-id error is
// passed on with a nil request.
func (r *Relay) agentAnswer(m *Msg, line []byte) (req *Request, ok bool) {
	key := KeyOf(m.ID)
	if req = r.table.client[key]; req != nil && !req.answered {
		req.answered = true
		return req, true
	}
	if req == nil && r.early[key] {
		// The proxy already answered this request: exactly one answer.
		delete(r.early, key)
		r.answeredClient.add(key)
		r.Counts.Dropped++
		r.tapIn(A2C, line, true)
		r.log.Info("late agent response to a request the proxy answered; dropped", "id", string(m.ID))
		return nil, false
	}
	if req == nil && m.Error != nil && nullID(m.ID) {
		return nil, true
	}
	r.unasked(A2C, m, line, req != nil || r.answeredClient.has(key))
	return nil, false
}

// clientAnswer finds the pending agent request a client response answers
// and takes it off the table. ok is false when the response was dropped.
func (r *Relay) clientAnswer(m *Msg, line []byte) (req *Request, ok bool) {
	key := KeyOf(m.ID)
	if req = r.table.agent[key]; req != nil {
		delete(r.table.agent, key)
		r.answeredAgent.add(key)
		return req, true
	}
	if m.Error != nil && nullID(m.ID) {
		return nil, true
	}
	if r.exited {
		// The agent is gone and its requests with it: nobody to answer.
		r.Counts.Dropped++
		r.tapIn(C2A, line, true)
		r.log.Debug("client answer after the agent exited; dropped", "id", string(m.ID))
		return nil, false
	}
	r.unasked(C2A, m, line, r.answeredAgent.has(key))
	return nil, false
}

// unasked drops an answer nobody is owed: counted, logged, recorded.
func (r *Relay) unasked(dir Dir, m *Msg, line []byte, dup bool) {
	r.Counts.Dropped++
	r.tapIn(dir, line, true)
	from := "agent"
	if dir == C2A {
		from = "client"
	}
	switch {
	case dup && dir == A2C:
		r.Counts.DuplicateAnswersFromAgent++
	case dup:
		r.Counts.DuplicateAnswersFromClient++
	case dir == A2C:
		r.Counts.StrayAnswersFromAgent++
	default:
		r.Counts.StrayAnswersFromClient++
	}
	if dup {
		r.log.Warn("second answer to a request already answered; dropped", "from", from, "id", r.escapeForLog(m.ID, 64))
		return
	}
	r.log.Warn("answer to no pending request (never sent or no longer pending); dropped", "from", from, "id", r.escapeForLog(m.ID, 64))
}
