package capture

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"
)

// Directions of transcript events.
const (
	DirMeta   = "meta"
	DirC2A    = "c2a"
	DirA2C    = "a2c"
	DirStderr = "stderr"
	DirExit   = "exit"
)

// Recorder writes transcript events. It is safe for concurrent use; events
// are written in the order the calls are made.
type Recorder struct {
	mu    sync.Mutex
	w     io.Writer
	since func() time.Duration
	norm  *Normalizer
	err   error
}

// NewRecorder writes to w; since returns the elapsed time for t_ms; norm
// (may be nil) rewrites machine-specific strings.
func NewRecorder(w io.Writer, since func() time.Duration, norm *Normalizer) *Recorder {
	return &Recorder{w: w, since: since, norm: norm}
}

// Err returns the first write error.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only well-formed values reach here
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		_, r.err = r.w.Write(append(b, '\n'))
	}
}

// Meta records the agent's argv and adapter name, and the scenario.
func (r *Recorder) Meta(argv []string, adapter, scenario string) {
	a := make([]string, len(argv))
	for i, s := range argv {
		a[i] = r.norm.String(s)
	}
	r.write(struct {
		Dir      string   `json:"dir"`
		Argv     []string `json:"argv"`
		Adapter  string   `json:"adapter"`
		Scenario string   `json:"scenario,omitempty"`
	}{DirMeta, a, adapter, scenario})
}

func (r *Recorder) ms() int64 { return r.since().Milliseconds() }

// Frame records one line of the wire in direction dir (DirC2A or DirA2C):
// as "msg" when it is valid JSON, else as "raw".
func (r *Recorder) Frame(dir string, line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	norm := r.norm.Bytes(line)
	if json.Valid(norm) {
		r.write(struct {
			T   int64           `json:"t_ms"`
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}{r.ms(), dir, json.RawMessage(norm)})
		return
	}
	r.write(struct {
		T   int64  `json:"t_ms"`
		Dir string `json:"dir"`
		Raw string `json:"raw"`
	}{r.ms(), dir, strings.ToValidUTF8(string(norm), "\uFFFD")})
}

// Stderr records one stderr line of the agent.
func (r *Recorder) Stderr(line string) {
	r.write(struct {
		T   int64  `json:"t_ms"`
		Dir string `json:"dir"`
		Msg string `json:"msg"`
	}{r.ms(), DirStderr, strings.ToValidUTF8(r.norm.String(strings.TrimRight(line, "\r\n")), "\uFFFD")})
}

// Exit records the agent's exit: code, and signal when it was killed.
func (r *Recorder) Exit(code int, signal string) {
	r.write(struct {
		T      int64  `json:"t_ms"`
		Dir    string `json:"dir"`
		Code   int    `json:"code"`
		Signal string `json:"signal,omitempty"`
	}{r.ms(), DirExit, code, signal})
}

// Normalizer replaces machine-specific substrings by stable ones, longest
// first. A nil Normalizer changes nothing.
type Normalizer struct {
	pairs []string // old, new, old, new ... ; olds sorted longest first
	repl  *strings.Replacer
}

// NewNormalizer builds a Normalizer from old→new pairs; empty olds are ignored.
func NewNormalizer(pairs map[string]string) *Normalizer {
	var olds []string
	for o := range pairs {
		if o != "" {
			olds = append(olds, o)
		}
	}
	// Longest first so that a directory inside another is replaced whole.
	for i := range olds {
		for j := i + 1; j < len(olds); j++ {
			if len(olds[j]) > len(olds[i]) || (len(olds[j]) == len(olds[i]) && olds[j] < olds[i]) {
				olds[i], olds[j] = olds[j], olds[i]
			}
		}
	}
	n := &Normalizer{}
	for _, o := range olds {
		n.pairs = append(n.pairs, o, pairs[o])
	}
	n.repl = strings.NewReplacer(n.pairs...)
	return n
}

// String normalizes s.
func (n *Normalizer) String(s string) string {
	if n == nil || n.repl == nil {
		return s
	}
	return n.repl.Replace(s)
}

// Bytes normalizes b.
func (n *Normalizer) Bytes(b []byte) []byte {
	if n == nil || n.repl == nil {
		return b
	}
	return []byte(n.repl.Replace(string(b)))
}
