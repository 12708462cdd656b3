package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/classify"
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
		Catalogue: catalogueOf(e.Observed(func(ev classify.Evidence, v classify.Verdict) {
			pending = append(pending, classified{ev, v})
		})),
		OnTurn: func(r acpguard.TurnReport) {
			tv := transcriptVerdict{Turn: len(out) + 1, SessionID: r.SessionID, RequestID: r.RequestID,
				Outcome: string(r.Outcome), Classifications: len(pending)}
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
	if o.turn != "" {
		sel, err := selectTurns(out, o.turn)
		if err != nil {
			return withCode(exitFailure, err)
		}
		fmt.Fprintf(o.err, "acp-guard: classify: %s\n", sel.said)
		out = sel.turns
	}
	for _, tv := range out {
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

// selection is what --turn chose: the turns, and a sentence saying which.
type selection struct {
	turns []transcriptVerdict
	said  string
}

// selectTurns picks the turns --turn names: a turn number (from 1, the
// order the turns settled in, as `acp-guard replay` numbers them) when
// the transcript has that many turns, else the turns whose session/prompt
// request has that JSON-RPC id (a number, or a string with or without its
// quotes). Neither is an error that lists the valid turns and ids.
func selectTurns(out []transcriptVerdict, arg string) (selection, error) {
	if n, err := strconv.Atoi(arg); err == nil && n >= 1 && n <= len(out) {
		tv := out[n-1]
		said := fmt.Sprintf("--turn %s: turn %d of %d (request id %s)", arg, n, len(out), tv.RequestID)
		if byID := turnsWithID(out, arg); len(byID) > 0 && byID[0].Turn != n {
			said += fmt.Sprintf("; the request with id %s is turn %d", arg, byID[0].Turn)
		}
		return selection{turns: []transcriptVerdict{tv}, said: said}, nil
	}
	if byID := turnsWithID(out, arg); len(byID) > 0 {
		var nums []string
		for _, tv := range byID {
			nums = append(nums, strconv.Itoa(tv.Turn))
		}
		said := fmt.Sprintf("--turn %s: the request with id %s, turn %s of %d", arg, byID[0].RequestID, strings.Join(nums, ", "), len(out))
		return selection{turns: byID, said: said}, nil
	}
	if len(out) == 0 {
		return selection{}, fmt.Errorf("--turn %s: the transcript has no prompt turn", arg)
	}
	const most = 20
	var valid []string
	for i, tv := range out {
		if i == most {
			valid = append(valid, fmt.Sprintf("… (%d more)", len(out)-most))
			break
		}
		valid = append(valid, fmt.Sprintf("%d (id %s)", tv.Turn, tv.RequestID))
	}
	return selection{}, fmt.Errorf("--turn %s: no such turn or request id; the transcript has %d prompt turn(s), by number (request id): %s",
		arg, len(out), strings.Join(valid, ", "))
}

// turnsWithID are the turns whose request id is id: its JSON text, or a
// string id given without its quotes.
func turnsWithID(out []transcriptVerdict, id string) []transcriptVerdict {
	quoted, _ := json.Marshal(id)
	var got []transcriptVerdict
	for _, tv := range out {
		if r := string(tv.RequestID); r == id || r == string(quoted) {
			got = append(got, tv)
		}
	}
	return got
}
