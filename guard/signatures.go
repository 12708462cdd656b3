package guard

import "github.com/acp-guard/acp-guard/observers"

// bindSignatures gives the control-chunk signatures their match from the
// engine's catalogue (one definition of prefix, suffix bound and vetoes
// for observer and classifier). A signature whose rule the catalogue lacks
// stays unbound: its chunks pass through as assistant text, and the guard
// logs why. KindReport signatures are bound to the guard's own test of an
// error line (textreport.go).
func (k *checks) bindSignatures(sigs []observers.ControlSignature) []observers.ControlSignature {
	out, missing := observers.Bind(sigs, func(rule string) (observers.ChunkRule, error) {
		if k.engine == nil {
			return observers.ChunkRule{}, errNoEngine
		}
		cc, err := k.engine.ControlChunk(rule)
		return observers.ChunkRule{Adapter: cc.Adapter, Prefix: cc.Prefix, Match: cc.Match}, err
	}, k.chunkAccept)
	for _, err := range missing {
		k.log.Warn("control-chunk projection disabled", "err", err)
	}
	return out
}

type guardError string

func (e guardError) Error() string { return string(e) }

const errNoEngine = guardError("no classification engine")
