package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/classify"
)

// classifyOptions are the flags and input of `acp-guard classify`.
type classifyOptions struct {
	adapter    string
	catalogue  string
	now        string
	transcript string // --transcript: classify the turns of a recording
	turn       string // --turn: only this turn (its number from 1, or its request id)
	args       []string

	in       io.Reader
	out, err io.Writer
}

func init() { subcommands = append(subcommands, newClassifyCmd) }

func newClassifyCmd(s *streams) *cobra.Command {
	o := &classifyOptions{}
	cmd := &cobra.Command{
		Use:   "classify [TEXT]",
		Short: "Classify a provider failure and print the verdict as JSON",
		Long: `classify reads evidence from TEXT or, without it, from standard input, and
prints the catalogue's verdict as one JSON line (code, class, confidence,
scope, rule, catalogueVersion, retryAfterMs, resetAt, safeExcerpt).

The evidence is either an evidence envelope, a JSON object such as
  {"source":"rpc_error","adapter":"codex-acp","rpcCode":-32603,"message":"…","data":{…},
   "httpStatus":429,"headers":{"retry-after":"20"},"chunk":"…","stderr":["…"],"exitCode":1,"stale":false}
or plain text, classified as the message of a JSON-RPC error. Evidence is
ranked: the report (rpcCode, message, data, httpStatus) before the turn's
error text in chunks ("chunk") before stderr (docs/CATALOGUE.md, "Precedence").

With --transcript FILE it replays a recorded session through the same
pipeline as the live proxy and prints, per prompt turn (--turn N for one),
the evidence envelope the proxy classified and the verdict; the envelope
can be fed back to classify with --now to reproduce the verdict. --turn
takes the turn's number — from 1, in the order the turns settled, as
` + "`acp-guard replay`" + ` numbers them — or the JSON-RPC id of its session/prompt
request; classify says on stderr which it took.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args, o.in, o.out, o.err = args, s.in, s.out, s.err
			return runClassify(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.adapter, "adapter", "", "adapter identity of the agent (codex-acp, claude-agent-acp, gemini-cli, cursor-acp, …)")
	f.StringVar(&o.catalogue, "catalogue", "", "use this operator-reviewed catalogue file instead of the embedded one")
	f.StringVar(&o.now, "now", "", "validate timing hints against this RFC 3339 time (default: the current time)")
	f.StringVar(&o.transcript, "transcript", "", "classify the prompt turns of this recorded transcript (JSONL) as the live proxy did")
	f.StringVar(&o.turn, "turn", "", "with --transcript: only this prompt turn: its number (from 1, as replay numbers them) or its request id")
	return cmd
}

// maxClassifyInput bounds what classify reads from standard input.
const maxClassifyInput = 16 << 20

// verdictJSON is a verdict with its timing hints in wire form
// (Verdict.Timing; the fields here shadow the verdict's own).
type verdictJSON struct {
	classify.Verdict
	RetryAfterMs *int64  `json:"retryAfterMs"`
	ResetAt      *string `json:"resetAt"`
}

func runClassify(_ context.Context, o *classifyOptions) error {
	now := time.Now()
	if o.now != "" {
		t, err := time.Parse(time.RFC3339Nano, o.now)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--now: %w", err))
		}
		now = t
	}
	if o.transcript != "" || o.turn != "" {
		if o.transcript == "" || len(o.args) > 0 {
			return withCode(exitUsage, fmt.Errorf("--transcript FILE takes no TEXT; --turn needs --transcript"))
		}
		e, err := loadEngine(o.catalogue)
		if err != nil {
			return withCode(exitFailure, err)
		}
		return classifyTranscript(o, e)
	}
	var input []byte
	if len(o.args) == 1 {
		input = []byte(o.args[0])
	} else {
		b, err := io.ReadAll(io.LimitReader(o.in, maxClassifyInput+1))
		if err != nil {
			return withCode(exitFailure, fmt.Errorf("reading evidence: %w", err))
		}
		if len(b) > maxClassifyInput {
			return withCode(exitFailure, fmt.Errorf("evidence larger than %d bytes", maxClassifyInput))
		}
		input = b
	}
	ev, err := parseEvidence(input)
	if err != nil {
		return withCode(exitFailure, err)
	}
	if o.adapter != "" {
		ev.Adapter = o.adapter
	}
	ev.Now = now
	e, err := loadEngine(o.catalogue)
	if err != nil {
		return withCode(exitFailure, err)
	}
	line, err := json.Marshal(toVerdictJSON(e.Classify(ev)))
	if err != nil {
		return withCode(exitFailure, err)
	}
	_, err = fmt.Fprintf(o.out, "%s\n", line)
	return err
}

// parseEvidence reads an evidence envelope, or plain text as the message of
// a JSON-RPC error. A JSON object that is not an envelope (e.g. a provider's
// error body) is plain text too.
func parseEvidence(input []byte) (classify.Evidence, error) {
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 {
		return classify.Evidence{}, fmt.Errorf("no evidence: pass TEXT or JSON as an argument or on standard input")
	}
	if trimmed[0] == '{' {
		var ev classify.Evidence
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err == nil && !dec.More() {
			if ev.Source == "" {
				ev.Source = classify.SourceRPCError
			}
			switch ev.Source {
			case classify.SourceRPCError, classify.SourceMessageChunk, classify.SourceStderr, classify.SourceExit, classify.SourceHTTP:
			default:
				return ev, fmt.Errorf("evidence source %q: want rpc_error, message_chunk, stderr, exit or http", ev.Source)
			}
			return ev, nil
		}
	}
	return classify.Evidence{Source: classify.SourceRPCError, Message: strings.TrimRight(string(input), "\r\n")}, nil
}

func toVerdictJSON(v classify.Verdict) verdictJSON {
	t := v.Timing()
	return verdictJSON{Verdict: v, RetryAfterMs: t.RetryAfterMs, ResetAt: t.ResetAt}
}
