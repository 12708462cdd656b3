package guard

// Fences. Everything armed for a prompt that runs later, as an event of
// its own — a timer (a wait's deadline, a parked prompt's next ask, the
// probe lease's refresh, the stall watchdog and its grace period, the
// board's publish and refresh), a worker's result (an attempt record
// written, a circuit's answer, the fallback models' circuits, an
// operator's request read from the board), the agent's answer to a
// request of acp-guard's own (a model switch, a compaction) — is armed
// under a fence, and runs only while the fence is live: while the prompt
// has not moved on since, and the client is still there. fence.live is
// that one check; transit arms the fences (machine.enter moves the
// epoch, board.holdMoved begins and ends holds, a terminal state ends
// the prompt).
//
// A fence has a scope, the part of the prompt's life the callback was
// armed for:
//
//   - scopeState (the default): until the prompt's next transition —
//     work a state scheduled, a circuit's answer about it;
//   - scopeHold: until the prompt's hold on the board ends or another
//     begins (held.go) — the board's timers, an operator's request for
//     that hold;
//   - scopePrompt: until the prompt is answered — the stall watchdog,
//     which follows the prompt across its states (stall.go).
type fence struct {
	m     *machine
	p     *prompt
	scope scope
	mark  uint64 // p.epoch (scopeState) or p.hold.n (scopeHold) when armed
}

type scope uint8

const (
	scopeState scope = iota
	scopeHold
	scopePrompt
)

// fence returns p's state fence as transit left it.
func (m *machine) fence(p *prompt) fence {
	return fence{m: m, p: p, scope: scopeState, mark: p.epoch}
}

// holdFence returns the fence of p's hold number n (held.Entry.Hold).
func (m *machine) holdFence(p *prompt, n uint64) fence {
	return fence{m: m, p: p, scope: scopeHold, mark: n}
}

// promptFence returns p's fence until it is answered.
func (m *machine) promptFence(p *prompt) fence {
	return fence{m: m, p: p, scope: scopePrompt}
}

// live is the one check: whether a callback armed under f may still act
// on its prompt — the client is still there and the prompt has not moved
// on.
func (f fence) live() bool {
	if f.m.closed {
		return false // nobody is left to answer; the agent's exit ends the prompt
	}
	return !f.moved()
}

// moved reports whether the prompt left what f was armed for, whatever
// became of the client. Only two readers want it without live's client
// check: an attempt record that could not be written stops recovery even
// after the client left (fail closed: the stop is recorded), and the
// compaction turn's updates are marked as long as it runs.
func (f fence) moved() bool {
	p := f.p
	switch f.scope {
	case scopeHold:
		return p.hold.n != f.mark || !p.state.actionable()
	case scopePrompt:
		return p.state.terminal()
	}
	return p.epoch != f.mark
}

// then returns fn armed under f: a callback that runs fn only while f is
// live, and otherwise does nothing.
func (f fence) then(fn func()) func() {
	return func() {
		if f.live() {
			fn()
		}
	}
}

// orElse returns fn armed under f, with dropped run instead when f is no
// longer live: for a result that must give back what the worker took for
// the prompt (a probe lease nobody will run).
func (f fence) orElse(fn, dropped func()) func() {
	return func() {
		if f.live() {
			fn()
		} else {
			dropped()
		}
	}
}
