package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/replay"
)

// transcriptVerdict is one line of `classify --transcript`: a prompt turn
// of the recording, the evidence envelope the guard classified for it (the
// last one, when a retry classified again) and the verdict. The envelope
// can be fed back to `acp-guard classify` (with --now) as it is.
type transcriptVerdict struct {
	Turn            int                `json:"turn"` // 1-based, in settling order
	SessionID       string             `json:"sessionId"`
	RequestID       json.RawMessage    `json:"requestId"`
	Outcome         string             `json:"outcome"`
	Now             string             `json:"now,omitempty"` // the clock the verdict was taken at
	Evidence        *classify.Evidence `json:"evidence,omitempty"`
	Verdict         *verdictJSON       `json:"verdict,omitempty"`
	Classifications int                `json:"classifications"` // how many failures of the turn were classified
}

// classified is one call of the engine during the replay.
type classified struct {
	ev classify.Evidence
	v  classify.Verdict
}

// classifyTranscript replays a recorded transcript through the live
// pipeline (acpguard.Replay: the pipeline the proxy runs, with the
// configuration the transcript was recorded with) and prints, for each
// prompt turn (or turn o.turn only), what the engine was given and what it
// answered. It is one path with the live proxy by construction: the
// verdicts are the guard's own.
func classifyTranscript(o *classifyOptions, e *classify.Engine) error {
	f, err := os.Open(o.transcript)
	if err != nil {
		return withCode(exitFailure, err)
	}
	events, readErrs := replay.ReadAll(f)
	f.Close()
	for _, err := range readErrs {
		fmt.Fprintf(o.err, "acp-guard: classify: %s: %v\n", o.transcript, err)
	}
	var pending []classified
	var out []transcriptVerdict
	_, err = acpguard.Replay(events, acpguard.Config{
		Adapter: o.adapter,
		Engine: e.Observed(func(ev classify.Evidence, v classify.Verdict) {
			pending = append(pending, classified{ev, v})
		}),
		OnTurn: func(r guard.TurnReport) {
			tv := transcriptVerdict{Turn: len(out) + 1, SessionID: r.SessionID, RequestID: r.RequestID,
				Outcome: r.Outcome, Classifications: len(pending)}
			if n := len(pending); n > 0 {
				last := pending[n-1]
				ev := redactEvidence(last.ev)
				vj := toVerdictJSON(last.v)
				tv.Evidence, tv.Verdict = &ev, &vj
				tv.Now = last.ev.Now.UTC().Format(time.RFC3339Nano)
			}
			pending = nil
			out = append(out, tv)
		},
	})
	if err != nil {
		return withCode(exitFailure, err)
	}
	if o.turn > len(out) {
		return withCode(exitFailure, fmt.Errorf("--turn %d: the transcript has %d prompt turn(s)", o.turn, len(out)))
	}
	for _, tv := range out {
		if o.turn > 0 && tv.Turn != o.turn {
			continue
		}
		b, err := json.Marshal(tv)
		if err != nil {
			return withCode(exitFailure, err)
		}
		fmt.Fprintf(o.out, "%s\n", b)
	}
	return nil
}

// redactEvidence removes credentials from the provider text of an
// envelope before it is printed (ids, paths and URLs stay: the envelope
// must classify the same).
func redactEvidence(ev classify.Evidence) classify.Evidence {
	ev.Message = classify.RedactSecrets(ev.Message)
	if len(ev.Stderr) > 0 {
		lines := make([]string, len(ev.Stderr))
		for i, l := range ev.Stderr {
			lines[i] = classify.RedactSecrets(l)
		}
		ev.Stderr = lines
	}
	if len(ev.Data) > 0 {
		d := []byte(classify.RedactSecrets(string(ev.Data)))
		if !json.Valid(d) {
			d, _ = json.Marshal(string(d))
		}
		ev.Data = d
	}
	return ev
}
