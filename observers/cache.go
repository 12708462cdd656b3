package observers

import "bytes"

// layoutCache remembers the bytes that precede the variable part of the
// last session/update an agent streamed — for a text chunk everything up to
// the text, for other kinds everything up to the end of the kind. Agents
// stream long runs of updates that share that prefix byte for byte, so one
// comparison replaces locating the session, the kind and the text again.
type layoutCache struct {
	prefix     []byte // copy of the shared prefix; empty: nothing cached
	sessionRaw []byte // the raw session id, inside prefix
	kind       UpdateKind
	text       bool // the prefix ends at the text's opening quote
}

// ObserveParams parses (or recognises) a session/update's params and
// applies it; it reports whether the frame must be suppressed and whether
// the params were a session/update at all.
func (tr *Tracker) ObserveParams(params []byte) (suppress, ok bool) {
	c := &tr.cache
	if len(c.prefix) > 0 && bytes.HasPrefix(params, c.prefix) {
		u := SessionUpdate{SessionRaw: c.sessionRaw, Kind: c.kind}
		if c.text {
			u.TextRaw = params[len(c.prefix)-1:]
		} else if rest := params[len(c.prefix):]; len(rest) == 0 || (rest[0] != ',' && rest[0] != '}') {
			u, ok = ParseUpdate(params) // the kind continued past the cached one
			if !ok {
				return false, false
			}
		}
		return tr.Observe(u), true
	}
	u, ok := ParseUpdate(params)
	if !ok {
		return false, false
	}
	tr.remember(params, u)
	return tr.Observe(u), true
}

// remember caches the prefix of params when it has the agents' usual
// layout (the fast path recognised it).
func (tr *Tracker) remember(params []byte, u SessionUpdate) {
	c := &tr.cache
	c.prefix = c.prefix[:0]
	if _, fast := parseUpdateFast(params); !fast {
		return
	}
	var end int
	switch {
	case u.TextRaw != nil:
		end = len(params) - len(u.TextRaw) + 1 // through the text's opening quote
		c.text = true
	default:
		// Through the kind's closing quote: after the session id comes
		// `","update":{"sessionUpdate":"KIND"`.
		i := bytes.Index(params, []byte(`"sessionUpdate":"`))
		if i < 0 {
			return
		}
		q := indexQuote(params[i+len(`"sessionUpdate":"`):])
		if q < 0 {
			return
		}
		end = i + len(`"sessionUpdate":"`) + q + 1
		c.text = false
	}
	if end > 512 {
		return // an unusually long id: not worth keeping
	}
	c.prefix = append(c.prefix, params[:end]...)
	c.kind = u.Kind
	off := len(fastSession) - 1
	c.sessionRaw = c.prefix[off : off+len(u.SessionRaw)]
}

// MaySuppress reports whether observing a session/update with these params
// could suppress it, in any turn: false for an update that is not visible
// message text, and for text that cannot start a suppressing signature of
// the current adapter's. It reads the layout cache but changes nothing,
// so it may run before the update is observed (the relay's fast path).
func (tr *Tracker) MaySuppress(params []byte) bool {
	var u SessionUpdate
	if c := &tr.cache; len(c.prefix) > 0 && c.text && bytes.HasPrefix(params, c.prefix) {
		u = SessionUpdate{Kind: c.kind, TextRaw: params[len(c.prefix)-1:]}
	} else {
		var ok bool
		if u, ok = ParseUpdate(params); !ok {
			return false // not observed as an update: forwarded
		}
	}
	if u.Kind != UpdateMessage || u.TextRaw == nil {
		return false // only message text is ever suppressed (Tracker.update)
	}
	for i := range tr.Signatures {
		s := &tr.Signatures[i]
		if s.Adapter != tr.Adapter || s.Kind == KindDiagnostic || s.Check == nil {
			continue // never matches, or matches and forwards
		}
		// A control signature's rule matches only text that starts with
		// its prefix; a text-reported failure has no such bound.
		if s.Kind != KindControl || mayStartWithFold(u.TextRaw, s.Prefix) {
			return true
		}
	}
	return false
}
