package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Summary condenses one capture for docs/real-agent-errors.md.
type Summary struct {
	Agent, Scenario string
	Outcome         string   // "stopReason=end_turn" or the JSON-RPC error
	Chunks          string   // agent_message_chunk text after the prompt was sent
	Updates         []string // other session/update kinds after the prompt, in order, deduplicated
	Stderr          []string // distinct stderr lines after the prompt was sent
	Requests        string   // provider requests: route counts and status sequence
	ElapsedMs       int64
	Exit            string
}

// Summarize reads OUT/<agent>/<scenario>.jsonl and its .provider.json.
func Summarize(dir, agent, scenario string) (Summary, error) {
	s := Summary{Agent: agent, Scenario: scenario}
	base := filepath.Join(dir, agent, scenario)
	b, err := os.ReadFile(base + ".provider.json")
	if err != nil {
		return s, err
	}
	var side Sidecar
	if err := json.Unmarshal(b, &side); err != nil {
		return s, fmt.Errorf("%s.provider.json: %w", base, err)
	}
	s.ElapsedMs = side.Result.ElapsedMs
	switch {
	case side.Result.Error != nil:
		var buf bytes.Buffer
		if json.Compact(&buf, side.Result.Error) != nil {
			buf.Write(side.Result.Error)
		}
		s.Outcome = side.Result.ErrorMethod + " error " + buf.String()
	default:
		s.Outcome = "stopReason=" + side.Result.StopReason
	}
	if side.Result.TimedOut {
		s.Outcome += " (after the capture's session/cancel)"
	}
	var statuses []string
	for _, r := range side.Requests {
		statuses = append(statuses, fmt.Sprintf("%s %d", r.Route, r.Status))
	}
	var routes []string
	for k, v := range side.Routes {
		routes = append(routes, fmt.Sprintf("%s×%d", k, v))
	}
	sort.Strings(routes)
	s.Requests = strings.Join(routes, ", ") + " [" + compress(statuses) + "]"
	f, err := os.Open(base + ".jsonl")
	if err != nil {
		return s, err
	}
	defer f.Close()
	return s, s.readTranscript(f)
}

// compress turns "a, a, a, b" into "a ×3, b".
func compress(items []string) string {
	var out []string
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j] == items[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", items[i], j-i))
		} else {
			out = append(out, items[i])
		}
		i = j
	}
	return strings.Join(out, ", ")
}

func (s *Summary) readTranscript(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	prompted := false
	seenErr := map[string]bool{}
	seenUpd := map[string]bool{}
	var chunks strings.Builder
	for sc.Scan() {
		var e struct {
			Dir    string          `json:"dir"`
			Msg    json.RawMessage `json:"msg"`
			Code   *int            `json:"code"`
			Signal string          `json:"signal"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Dir {
		case DirC2A:
			if strings.Contains(string(e.Msg), `"method":"session/prompt"`) {
				prompted = true
			}
		case DirA2C:
			var f struct {
				Method string `json:"method"`
				Params struct {
					Update struct {
						Kind    string `json:"sessionUpdate"`
						Content struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"update"`
				} `json:"params"`
			}
			if !prompted || json.Unmarshal(e.Msg, &f) != nil || f.Method != "session/update" {
				continue
			}
			u := f.Params.Update
			if u.Kind == "agent_message_chunk" {
				chunks.WriteString(u.Content.Text)
			} else if !seenUpd[u.Kind] && u.Kind != "available_commands_update" {
				seenUpd[u.Kind] = true
				s.Updates = append(s.Updates, u.Kind)
			}
		case DirStderr:
			var line string
			_ = json.Unmarshal(e.Msg, &line)
			line = stripTimestamp(line)
			if prompted && !seenErr[line] && len(s.Stderr) < 8 {
				seenErr[line] = true
				s.Stderr = append(s.Stderr, line)
			}
		case DirExit:
			if e.Code != nil {
				s.Exit = fmt.Sprint(*e.Code)
			}
			if e.Signal != "" {
				s.Exit += " (" + e.Signal + " by the capture after stdin close)"
			}
		}
	}
	s.Chunks = chunks.String()
	return sc.Err()
}

// stripTimestamp drops a leading RFC 3339 timestamp (codex's tracing lines)
// so that repeated lines collapse.
func stripTimestamp(line string) string {
	if len(line) > 28 && line[4] == '-' && line[10] == 'T' {
		if i := strings.IndexByte(line, ' '); i > 0 {
			return strings.TrimSpace(line[i:])
		}
	}
	return line
}

// Markdown renders summaries of one agent as a list of sections.
func Markdown(w io.Writer, sums []Summary) {
	for _, s := range sums {
		fmt.Fprintf(w, "#### %s / %s\n\n", s.Agent, s.Scenario)
		fmt.Fprintf(w, "- client got: `%s`\n", clip(s.Outcome, 1200))
		if s.Chunks != "" {
			fmt.Fprintf(w, "- assistant text during the turn: %q\n", clip(s.Chunks, 400))
		}
		if len(s.Updates) > 0 {
			fmt.Fprintf(w, "- other updates: %s\n", strings.Join(s.Updates, ", "))
		}
		fmt.Fprintf(w, "- provider requests: %s\n", s.Requests)
		fmt.Fprintf(w, "- elapsed: %.1fs; exit: %s\n", float64(s.ElapsedMs)/1000, s.Exit)
		if len(s.Stderr) > 0 {
			fmt.Fprintf(w, "- stderr after the prompt:\n\n```\n")
			for _, l := range s.Stderr {
				fmt.Fprintln(w, clip(l, 300))
			}
			fmt.Fprintf(w, "```\n")
		}
		fmt.Fprintln(w)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
