package transport_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/testbin"
)

// frameGen makes random frames from a seed: JSON with unicode and escapes,
// LF and CRLF endings, empty lines, padded JSON and lines that are not JSON.
// Responses answer only the ids in pending (an answer to an id never sent
// is dropped by the relay, never relayed).
type frameGen struct {
	r        *rand.Rand
	requests bool     // also make client requests (ids "req-N")
	pending  []string // ids responses may answer, each once, in order
	answered []string // the ids answered so far
	n        int
}

func newFrameGen(seed uint64, requests bool) *frameGen {
	return &frameGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), requests: requests}
}

// pieces of JSON string content: raw unicode, escapes, plain text.
var strPieces = []string{
	"a", "xyz", " ", "é", "日本語", "🙂", "\u2028", "ß", "Ω", "\u00a0",
	`\"`, `\\`, `\/`, `\n`, `\r\n`, `\t`, `\u0000`, `\u001b[31m`, `\ud83d\ude00`, `\u2028`,
	"Error: RetriableError: ", "}", "{", `\"id\":1`, "\u007f",
}

func (g *frameGen) str(max int) string {
	var b strings.Builder
	for n := g.r.IntN(max); n > 0; n-- {
		b.WriteString(strPieces[g.r.IntN(len(strPieces))])
	}
	return b.String()
}

func (g *frameGen) eol() string {
	if g.r.IntN(5) == 0 {
		return "\r\n"
	}
	return "\n"
}

// frame returns one frame with its terminator, and the id when it is a
// client request.
func (g *frameGen) frame() (frame string, reqID string) {
	g.n++
	switch k := g.r.IntN(10); {
	case k < 3:
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"x/note","params":{"n":%d,"s":"%s"}}`, g.n, g.str(40)) + g.eol(), ""
	case k < 4 && g.requests:
		id := fmt.Sprintf("req-%d", g.n)
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"x/ask","params":{"s":"%s"}}`, id, g.str(20)) + g.eol(), `"` + id + `"`
	case k < 5 && len(g.pending) > 0:
		id := g.pending[0]
		g.pending, g.answered = g.pending[1:], append(g.answered, id)
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"s":"%s","list":[1,2.5e3,-0,true,null]}}`, id, g.str(20)) + g.eol(), ""
	case k < 5:
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"x/note","params":{"n":%d}}`, g.n) + g.eol(), ""
	case k < 6:
		// Not JSON: printable noise, control bytes, invalid UTF-8, a lone CR.
		var b []byte
		for n := 1 + g.r.IntN(60); n > 0; n-- {
			c := byte(g.r.IntN(256))
			if c == '\n' {
				c = '\r'
			}
			b = append(b, c)
		}
		return "!not json " + string(b) + g.eol(), ""
	case k < 7:
		return `{"jsonrpc":"2.0","id":` + fmt.Sprint(g.n) + `,"result":` + g.eol(), "" // truncated JSON
	case k < 8:
		return g.eol(), "" // empty line
	case k < 9:
		return fmt.Sprintf(" \t{ \"jsonrpc\" : \"2.0\" , \"method\" : \"x/padded\" , \"params\" : { \"s\" : \"%s\" } }  ", g.str(10)) + g.eol(), ""
	default:
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-%d","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}`, g.n, g.str(80)) + g.eol(), ""
	}
}

// bigFrame is a notification of about size bytes.
func (g *frameGen) bigFrame(size int) string {
	var b strings.Builder
	b.Grow(size + 100)
	b.WriteString(`{"jsonrpc":"2.0","method":"x/big","params":{"s":"`)
	// Random 64 KiB blocks, each used a few times: cheap to make, and no
	// two neighbouring 64 KiB windows of the frame are alike.
	for b.Len() < size {
		block := g.str(8 << 10)
		for range 4 {
			b.WriteString(block)
		}
	}
	b.WriteString(`"}}`)
	b.WriteString(g.eol())
	return b.String()
}

// stream makes n frames with one big frame of bigSize (0: none) at a random
// place; it returns the bytes and the request ids in order.
func (g *frameGen) stream(n, bigSize int) ([]byte, []string) {
	var b bytes.Buffer
	var ids []string
	big := -1
	if bigSize > 0 {
		big = g.r.IntN(n)
	}
	for i := range n {
		if i == big {
			b.WriteString(g.bigFrame(bigSize))
		}
		f, id := g.frame()
		b.WriteString(f)
		if id != "" {
			ids = append(ids, id)
		}
	}
	return b.Bytes(), ids
}

// firstDiff describes where got and want first differ.
func firstDiff(got, want []byte) string {
	n := min(len(got), len(want))
	for i := range n {
		if got[i] != want[i] {
			lo := max(0, i-40)
			return fmt.Sprintf("first difference at byte %d of %d (got %d bytes): got %q, want %q",
				i, len(want), len(got), got[lo:min(len(got), i+40)], want[lo:min(len(want), i+40)])
		}
	}
	return fmt.Sprintf("got %d bytes, want %d (one is a prefix of the other)", len(got), len(want))
}

// writeAsync writes b to the guard's stdin from another goroutine and
// closes it when close is set; the returned channel yields the write error.
// The test waits on the channel; the goroutine exits when the write ends.
func (g *guard) writeAsync(b []byte, closeAfter bool) <-chan error {
	in := g.in
	if closeAfter {
		g.in = nil
	}
	errc := make(chan error, 1)
	go func() {
		_, err := in.Write(b)
		if closeAfter {
			in.Close()
		}
		errc <- err
	}()
	return errc
}

// TestE2ERoundTripThroughCat sends random frames to `cat` as the agent:
// what comes back must be exactly what was sent, followed by one error per
// client request (cat never answers; it exits at EOF).
func TestE2ERoundTripThroughCat(t *testing.T) {
	for _, tt := range []struct {
		name     string
		seed     uint64
		frames   int
		big      int
		requests bool
		tail     string // appended unterminated final line
		wantTail string // what of it the client gets
	}{
		{name: "small frames", seed: 1, frames: 3000},
		{name: "with requests", seed: 2, frames: 3000, requests: true},
		{name: "20 MiB frame", seed: 3, frames: 500, big: 20 << 20, requests: true},
		// A complete frame at EOF gets its newline; a fragment or a blank
		// remainder is not forwarded (TestE2EFramesStayFrames covers more).
		{name: "final line unterminated", seed: 4, frames: 200, tail: `{"jsonrpc":"2.0","method":"x/last"}`,
			wantTail: `{"jsonrpc":"2.0","method":"x/last"}` + "\n"},
		{name: "final line unterminated not JSON", seed: 5, frames: 10, tail: "\r"},
		{name: "final line a fragment", seed: 6, frames: 10, tail: `{"jsonrpc":"2.0","method":"x/la`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, ids := newFrameGen(tt.seed, tt.requests).stream(tt.frames, tt.big)
			want := append(append([]byte(nil), in...), tt.wantTail...)
			in = append(in, tt.tail...)
			g := startGuard(t, nil, "cat")
			werr := g.writeAsync(in, true)
			got := g.rest()
			if err := <-werr; err != nil {
				t.Fatalf("writing: %v", err)
			}
			if code := g.wait(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			if len(got) < len(want) || !bytes.Equal(got[:len(want)], want) {
				t.Fatalf("relayed bytes differ: %s", firstDiff(got, want))
			}
			// The rest: exactly one error per client request, in order.
			var gotIDs []string
			for _, ln := range bytes.SplitAfter(got[len(want):], []byte("\n")) {
				if len(ln) == 0 {
					continue
				}
				var m rpcMsg
				if err := json.Unmarshal(ln, &m); err != nil || m.Error == nil || m.Error.Code != -32603 {
					t.Fatalf("after the relayed bytes: %q, want an error response (-32603)", trunc(ln, 300))
				}
				gotIDs = append(gotIDs, string(m.ID))
			}
			if fmt.Sprint(gotIDs) != fmt.Sprint(ids) {
				t.Errorf("errors for ids %v, want %v", gotIDs, ids)
			}
		})
	}
}

// TestE2EAgentFramesExact makes an agent write random frames, its answers
// among them, and checks the client receives them byte for byte. The
// client sends the requests those answers are for first; the agent starts
// writing once it has read them all (x/go), so every answer is owed.
func TestE2EAgentFramesExact(t *testing.T) {
	for _, tt := range []struct {
		name   string
		seed   uint64
		frames int
		big    int
	}{
		{name: "small frames", seed: 11, frames: 2000},
		{name: "20 MiB frame", seed: 12, frames: 100, big: 20 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gen := newFrameGen(tt.seed, false)
			for i := range tt.frames {
				gen.pending = append(gen.pending, fmt.Sprint(i+1))
			}
			var want, send bytes.Buffer
			for i := range tt.frames {
				if tt.big > 0 && i == tt.frames/2 {
					want.WriteString(gen.bigFrame(tt.big))
				}
				f, _ := gen.frame()
				want.WriteString(f)
			}
			if len(gen.answered) == 0 {
				t.Fatal("the stream answers no request")
			}
			for _, id := range gen.answered {
				send.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"x/ask","params":{}}` + "\n")
			}
			send.WriteString(`{"jsonrpc":"2.0","method":"x/go","params":{}}` + "\n")
			frames := filepath.Join(t.TempDir(), "frames")
			if err := os.WriteFile(frames, want.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("FRAMES", frames)
			g := startGuard(t, nil, "sh", "-c", `while read -r l; do case "$l" in *'"x/go"'*) break;; esac; done; cat "$FRAMES"; exec cat >/dev/null`)
			werr := g.writeAsync(send.Bytes(), false)
			got := make([]byte, want.Len())
			if _, err := io.ReadFull(g.out, got); err != nil {
				t.Fatalf("reading %d bytes: %v", want.Len(), err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("relayed bytes differ: %s", firstDiff(got, want.Bytes()))
			}
			if err := <-werr; err != nil {
				t.Fatalf("writing: %v", err)
			}
			g.closeIn()
			if rest := g.rest(); len(rest) != 0 {
				t.Errorf("unexpected output after the frames (every request was answered): %q", trunc(rest, 300))
			}
			if code := g.wait(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
		})
	}
}

// demoAgent is the argv of the demo agent running scenario.
func demoAgent(t *testing.T, scenario string, flags ...string) []string {
	return append([]string{testbin.Path(t), "demo-agent", "--scenario", scenario}, flags...)
}

// TestE2EInterleavedCat writes many small frames while reading the echo at
// the same time: both directions are busy at once and the order holds.
func TestE2EInterleavedCat(t *testing.T) {
	in, _ := newFrameGen(21, false).stream(50000, 0)
	g := startGuard(t, nil, "cat")
	werr := g.writeAsync(in, true)
	got := g.rest()
	if err := <-werr; err != nil {
		t.Fatalf("writing: %v", err)
	}
	if !bytes.Equal(got, in) {
		t.Fatalf("relayed bytes differ: %s", firstDiff(got, in))
	}
	if code := g.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// TestE2EInterleavedStreamAndEcho runs a streaming prompt turn while the
// client sends a numbered echo frame after another: each direction keeps
// its order, and the prompt's answer follows all its notifications.
func TestE2EInterleavedStreamAndEcho(t *testing.T) {
	const updates, echoes = 20000, 3000
	g := startGuard(t, nil, demoAgent(t, "stream", "--count", fmt.Sprint(updates))...)
	sid := g.openSession()
	var send bytes.Buffer
	send.WriteString(prompt(3, sid))
	for i := range echoes {
		send.WriteString(echoFrame(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"x/seq","params":{"n":%d}}`, i)))
	}
	send.WriteString(request("end", "test/echo", `{"payload":"e30="}`)) // "{}"
	werr := g.writeAsync(send.Bytes(), false)

	var nUpdates, nextSeq int
	promptDone, endDone := false, false
	for !promptDone || !endDone {
		m := g.msg()
		switch {
		case m.Method == "session/update":
			if promptDone {
				t.Fatalf("session/update after the prompt's answer: %s", trunc(m.raw, 200))
			}
			nUpdates++
		case m.Method == "x/seq":
			var p struct{ N int }
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatalf("x/seq params: %v", err)
			}
			if p.N != nextSeq {
				t.Fatalf("echo %d arrived when %d was due", p.N, nextSeq)
			}
			nextSeq++
		case string(m.ID) == "3":
			if m.Error != nil {
				t.Fatalf("prompt failed: %s", m.raw)
			}
			promptDone = true
		case string(m.ID) == `"end"`:
			endDone = true
		case string(m.raw) == "{}\n":
		default:
			t.Fatalf("unexpected frame %s", trunc(m.raw, 200))
		}
	}
	if err := <-werr; err != nil {
		t.Fatalf("writing: %v", err)
	}
	if nUpdates != updates {
		t.Errorf("got %d session/update frames before the answer, want %d", nUpdates, updates)
	}
	if nextSeq != echoes {
		t.Errorf("got %d echo frames, want %d", nextSeq, echoes)
	}
	g.closeIn()
	if code := g.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}
