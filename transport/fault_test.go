package transport_test

// The randomized fault test: a seeded hostile agent (fault_agent_test.go)
// and a seeded hostile client drive the built acp-guard over real pipes.
// Each run draws a scenario from (seed, run) — frames cut mid-line, exits
// and crashes at random points, signals to acp-guard (early ones too),
// duplicate and stray answers both ways, late output, slow reads,
// cancels, lines over the cap — and checks what must hold whatever
// happens:
//
//   - every client request acp-guard read is answered exactly once, and
//     the initialize sent before an early signal is answered;
//   - no answer reaches the client for an id it never sent, none twice;
//     the agent gets at most one answer per request of its own, none it
//     never asked for;
//   - every stdout line is the agent's own line, unchanged, or a frame of
//     acp-guard's that is valid UTF-8, valid JSON and valid ACP (when the
//     schema is installed: make acp-schema);
//   - no "acp-guard:" id reaches the client;
//   - no retry is sent after output of the attempt reached the client
//     (from the transcript, in the order acp-guard handled frames);
//   - acp-guard exits with the code the scenario calls for, by itself;
//     nothing of the agent's process group is left; nothing panicked.
//
// Runs are reproducible by seed: go test ./transport -run
// TestFaultRandomized -fault.seed S [-fault.run K] -v. Timing comes from
// conditions (frames, a stderr line), never from sleeps that must be long
// enough; the only pauses are part of a scenario (an early signal's delay,
// a slow reader's).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acp-guard/acp-guard/internal/acpschema"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/replay"
)

var (
	faultSeed     = flag.Uint64("fault.seed", 0, "seed of TestFaultRandomized (0: a new one, printed)")
	faultRuns     = flag.Int("fault.runs", 0, "runs of TestFaultRandomized (0: 200, or 50 with -short)")
	faultRun      = flag.Int("fault.run", -1, "run only this run of the seed")
	faultParallel = flag.Int("fault.parallel", 8, "runs of TestFaultRandomized at a time")
)

// faultWatchdog bounds one run; it only ends a hang (reported as one).
const faultWatchdog = 60 * time.Second

// stopsigReady: acp-guard has caught its stop signals (GODEBUG=inittrace=1).
const stopsigReady = "init github.com/acp-guard/acp-guard/cmd/acp-guard/internal/stopsig @"

const faultPolicy = `{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":2,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`

// faultResult is what a run found.
type faultResult struct {
	sc         faultScenario
	violations []string
	stdout     string
	stderr     string
	elapsed    time.Duration
	answered   int // client requests answered
	dropped    map[string]int
	retries    int
	passed     int // agent frames written on the fast path
}

func TestFaultRandomized(t *testing.T) {
	seed := *faultSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	runs := *faultRuns
	if runs == 0 {
		runs = 200
		if testing.Short() {
			runs = 50
		}
	}
	t.Logf("seed %d, %d runs, %d at a time (reproduce: go test ./transport -run TestFaultRandomized -fault.seed %d -v)", seed, runs, *faultParallel, seed)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := testbin.Path(t)
	var v *acpschema.Validator
	if path, err := acpschema.Locate(); err == nil {
		if v, err = acpschema.Load(path); err != nil {
			t.Fatalf("ACP schema %s: %v", path, err)
		}
	} else {
		t.Logf("ACP schema not installed (make acp-schema): frames are checked for UTF-8 and JSON only")
	}
	dir := t.TempDir()
	start := time.Now()
	base := runtime.NumGoroutine()
	results := make([]*faultResult, runs)
	sem := make(chan struct{}, max(*faultParallel, 1))
	var wg sync.WaitGroup
	for k := range runs {
		if *faultRun >= 0 && k != *faultRun {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() { // one run; the test waits for it on wg
			defer wg.Done()
			defer func() { <-sem }()
			runDir := filepath.Join(dir, strconv.Itoa(k))
			if err := os.Mkdir(runDir, 0o700); err != nil {
				results[k] = &faultResult{violations: []string{err.Error()}}
				return
			}
			results[k] = runFault(bin, exe, runDir, drawScenario(seed, k), v)
		}()
	}
	wg.Wait()
	summarize(t, seed, results, time.Since(start))
	waitGoroutines(t, base)
}

// summarize reports the runs: counts, and every violation with its
// scenario and how to run it again.
func summarize(t *testing.T, seed uint64, results []*faultResult, took time.Duration) {
	t.Helper()
	kinds := map[string]int{}
	dropped := map[string]int{}
	done, failed, answered, retries, passed := 0, 0, 0, 0, 0
	for _, r := range results {
		if r == nil {
			continue
		}
		done++
		passed += r.passed
		answered += r.answered
		retries += r.retries
		for k, n := range r.dropped {
			dropped[k] += n
		}
		for _, k := range r.sc.kinds() {
			kinds[k]++
		}
		if len(r.violations) == 0 {
			continue
		}
		failed++
		sc, _ := json.Marshal(r.sc)
		t.Errorf("run %d of seed %d violates:\n  - %s\nscenario: %s\nreproduce: go test ./transport -run TestFaultRandomized -fault.seed %d -fault.run %d -v\nstdout (tail):\n%s\nstderr (tail):\n%s",
			r.sc.Run, seed, strings.Join(r.violations, "\n  - "), sc, seed, r.sc.Run, tail(r.stdout, 3000), tail(r.stderr, 3000))
	}
	var ks []string
	for k, n := range kinds {
		ks = append(ks, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(ks)
	var ds []string
	for k, n := range dropped {
		ds = append(ds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(ds)
	t.Logf("%d runs in %v, %d with violations; %d client requests answered, %d retries sent, %d agent frames on the fast path; dropped: %s\nscenario features: %s",
		done, took.Round(time.Millisecond), failed, answered, retries, passed, strings.Join(ds, " "), strings.Join(ks, ", "))
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// kinds names the faults a scenario exercises (for the summary).
func (sc faultScenario) kinds() []string {
	var k []string
	add := func(ok bool, name string) {
		if ok {
			k = append(k, name)
		}
	}
	add(sc.Early, "early-signal")
	add(sc.Signal != "" && !sc.Early, "signal")
	add(sc.SlowRead, "slow-read")
	add(sc.DupAnswers, "client-dup-answers")
	add(sc.StrayAnswer, "client-stray-answer")
	add(sc.Oversize, "client-oversize")
	add(sc.CutAtEnd, "client-cut")
	add(sc.CloseEarly, "close-early")
	add(sc.Agent.IgnoreEOF, "agent-ignores-eof")
	add(sc.Agent.IgnoreTerm, "agent-ignores-term")
	add(sc.Agent.InitTwice || sc.Agent.InitStray, "agent-init-dup-stray")
	seen := map[string]bool{}
	for _, p := range sc.Agent.Prompts {
		for _, act := range p[0] {
			name, _, _ := cutAction(act)
			if !seen[name] {
				seen[name] = true
				k = append(k, "agent-"+name)
			}
		}
	}
	for _, p := range sc.Prompts {
		if p.CancelAfter >= 0 {
			k = append(k, "cancel")
			break
		}
	}
	return k
}

// faultClient is the hostile client of one run: it writes acp-guard's
// stdin and reads its stdout (in a goroutine of its own).
type faultClient struct {
	sc        faultScenario
	p         *acptest.Proc
	sent      map[string]string // request id → method
	mu        sync.Mutex
	lines     [][]byte // every stdout line, in order
	eof       bool
	more      chan struct{} // cap 1: lines arrived or EOF
	next      int           // the first line the script has not seen
	signalled bool
}

// read reads stdout to EOF; slow reads small pieces and pauses between
// them (backpressure on acp-guard). It ends at EOF.
func (c *faultClient) read(r io.Reader, slow bool) {
	br := bufio.NewReaderSize(r, 1<<20)
	if slow {
		br = bufio.NewReaderSize(&slowReader{r: r}, 512)
	}
	for {
		line, err := br.ReadBytes('\n')
		c.mu.Lock()
		if len(line) > 0 {
			c.lines = append(c.lines, line)
		}
		if err != nil {
			c.eof = true
		}
		c.mu.Unlock()
		select {
		case c.more <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

type slowReader struct{ r io.Reader }

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(200 * time.Microsecond) // part of the scenario: a slow client
	return s.r.Read(p[:min(len(p), 512)])
}

// nextLine returns the next stdout line; ok is false at EOF.
func (c *faultClient) nextLine() ([]byte, bool) {
	for {
		c.mu.Lock()
		if c.next < len(c.lines) {
			l := c.lines[c.next]
			c.next++
			c.mu.Unlock()
			return l, true
		}
		eof := c.eof
		c.mu.Unlock()
		if eof {
			return nil, false
		}
		<-c.more
	}
}

func (c *faultClient) send(s string) { _ = c.p.Write(s) }

func (c *faultClient) request(id int, method, params string) {
	c.sent[strconv.Itoa(id)] = method
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params))
}

func (c *faultClient) signal() {
	c.signalled = true
	_ = c.p.Cmd.Process.Signal(signalByName(c.sc.Signal))
}

// waitAnswer reads until the answer to id; every other frame is handed
// to frame (which may end the wait by returning true) after agent
// requests were answered. ok is false at EOF or when frame ended it.
func (c *faultClient) waitAnswer(id string, frame func() bool) bool {
	for {
		l, ok := c.nextLine()
		if !ok {
			return false
		}
		if m, err := acptest.Parse(l); err == nil {
			if m.Method == "" && string(m.ID) == id {
				return true
			}
			if m.Method != "" && m.ID != nil && string(m.ID) != "null" {
				answer := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"a"}}}` + "\n"
				c.send(answer)
				if c.sc.DupAnswers {
					c.send(answer)
				}
			}
		}
		if frame != nil && frame() {
			return false
		}
	}
}

// script plays the client's side of the scenario.
func (c *faultClient) script(stderr *testbin.Stream) {
	sc := c.sc
	c.request(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	if sc.Early {
		if stderr.WaitFor(stopsigReady) {
			time.Sleep(time.Duration(sc.EarlyMs * float64(time.Millisecond))) // the scenario's random point
		}
		c.signal()
		return
	}
	if !c.waitAnswer("1", nil) {
		return
	}
	c.request(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)
	if !c.waitAnswer("2", nil) {
		return
	}
	if sc.Oversize {
		c.request(60, "x/big", `{"pad":"`+strings.Repeat("y", faultHuge)+`"}`)
		if !c.waitAnswer("60", nil) {
			return
		}
	}
	if sc.Garbage {
		c.send("!client garbage, not JSON\n")
	}
	for i := range sc.Prompts {
		if !c.turn(i) {
			return
		}
	}
	if sc.Signal != "" && sc.SignalAt == len(sc.Prompts) {
		c.signal()
		return
	}
	if sc.StrayAnswer {
		c.send(`{"jsonrpc":"2.0","id":777,"result":{}}` + "\n")
	}
	if sc.CutAtEnd {
		c.sent["70"] = "x/cut"
		c.send(`{"jsonrpc":"2.0","id":70,"method":"x/cut","par`)
	}
	if _, ends := sc.agentEnds(); ends {
		// The scenario has the agent end itself: the client closes only once
		// acp-guard has seen it go. Closing earlier races the agent's own
		// exit against the idle SIGTERM that follows the client's close,
		// and the exit code would depend on which came first.
		stderr.WaitFor(`msg="agent exited"`)
	}
	c.p.CloseStdin()
}

// turn plays prompt i: sends it, answers what the agent asks, cancels and
// signals when the scenario says. It reports whether the script goes on.
func (c *faultClient) turn(i int) bool {
	sc, turn := c.sc, c.sc.Prompts[i]
	mid := sc.Signal != "" && sc.SignalAt == i
	if mid && sc.SignalMid < 0 {
		c.signal()
		return false
	}
	id := 10 + i
	c.request(id, "session/prompt", fmt.Sprintf(`{"sessionId":"s-1","prompt":[{"type":"text","text":"p%d"}]}`, i))
	if sc.CloseEarly && i == len(sc.Prompts)-1 {
		c.p.CloseStdin()
		return false
	}
	frames, cancelled := 0, false
	step := func() bool {
		if !cancelled && turn.CancelAfter == frames {
			cancelled = true
			c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}` + "\n")
		}
		if mid && frames >= sc.SignalMid {
			c.signal()
			return true
		}
		return false
	}
	if step() {
		return false
	}
	answered := c.waitAnswer(strconv.Itoa(id), func() bool { frames++; return step() })
	if c.signalled {
		return false
	}
	if mid { // answered before that many frames came: now
		c.signal()
		return false
	}
	return answered
}

// runFault runs one scenario and checks it.
func runFault(bin, exe, dir string, sc faultScenario, v *acpschema.Validator) *faultResult {
	res := &faultResult{sc: sc}
	fail := func(format string, args ...any) {
		res.violations = append(res.violations, fmt.Sprintf(format, args...))
	}
	plan, _ := json.Marshal(sc.Agent)
	planPath, logPath := filepath.Join(dir, "plan.json"), filepath.Join(dir, "agent.log")
	rec, pol := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "policy.json")
	for p, b := range map[string][]byte{planPath: plan, pol: []byte(faultPolicy)} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			fail("%v", err)
			return res
		}
	}
	env := os.Environ()
	if sc.Early {
		env = append(env, "GODEBUG=inittrace=1")
	}
	began := time.Now()
	p, err := acptest.Spawn([]string{bin, "--log-level", "info", "--grace", "2s", "--max-line", "65536", "--policy", pol,
		"--state-dir", filepath.Join(dir, "state"), "--record", rec, "--", exe, "fault-agent", planPath, logPath},
		acptest.Options{Env: env, Watchdog: faultWatchdog})
	if err != nil {
		fail("start: %v", err)
		return res
	}
	c := &faultClient{sc: sc, p: p, sent: map[string]string{}, more: make(chan struct{}, 1)}
	readDone := make(chan struct{})
	go func() { c.read(p.RawOut(), sc.SlowRead); close(readDone) }() // ends at stdout EOF
	c.script(p.Stderr)
	<-readDone // a signalled run keeps its input open until acp-guard is gone
	p.CloseStdin()
	p.Stderr.WaitEOF()
	<-p.Done()
	p.Kill() // it has exited: this only stops the watchdog
	res.elapsed = time.Since(began)
	res.stderr = p.Stderr.String()
	var all bytes.Buffer
	for _, l := range c.lines {
		all.Write(l)
	}
	res.stdout = all.String()
	if p.Hung() {
		fail("acp-guard still ran after %v (killed)", faultWatchdog)
	}
	checkFault(res, c, p.Cmd.ProcessState, logPath, rec, v, fail)
	return res
}

// agentLog is what the fault agent wrote and read.
type agentLog struct {
	pid   int
	wrote map[string]bool // lines written whole
	cut   []string        // frames cut off
	read  [][]byte
	asked map[string]bool // ids of the agent's own requests
}

func readAgentLog(path string) agentLog {
	a := agentLog{wrote: map[string]bool{}, asked: map[string]bool{}}
	b, _ := os.ReadFile(path)
	for _, ln := range strings.Split(string(b), "\n") {
		kind, rest, _ := strings.Cut(ln, " ")
		switch kind {
		case "P":
			a.pid, _ = strconv.Atoi(rest)
		case "W":
			a.wrote[rest] = true
			if m, err := acptest.Parse([]byte(rest)); err == nil && m.Method != "" && m.ID != nil {
				a.asked[string(m.ID)] = true
			}
		case "C":
			a.cut = append(a.cut, rest)
		case "R":
			a.read = append(a.read, []byte(rest))
		}
	}
	return a
}

var countRe = regexp.MustCompile(`(duplicate_answers_from_agent|stray_answers_from_agent|duplicate_answers_from_client|stray_answers_from_client|duplicate_proxy_answers)=(\d+)`)

// checkFault checks a finished run's invariants.
func checkFault(res *faultResult, c *faultClient, ps *os.ProcessState, logPath, rec string, v *acpschema.Validator, fail func(string, ...any)) {
	sc := res.sc
	agent := readAgentLog(logPath)
	answers := checkStdout(c, agent, v, fail)
	for id := range c.sent {
		if answers[id] > 0 {
			res.answered++
		}
	}
	// Every request acp-guard read is answered; the initialize sent before
	// an early signal too.
	evs := readTranscript(rec)
	for _, e := range evs {
		if e.Dir != replay.DirC2A || !e.Original() || !e.IsJSON() {
			continue
		}
		if m, err := acptest.Parse(e.Msg); err == nil && m.Method != "" && m.ID != nil && answers[string(m.ID)] != 1 {
			fail("request %s (%s) was read by acp-guard and answered %d times", m.ID, m.Method, answers[string(m.ID)])
		}
	}
	if sc.Early && answers["1"] != 1 {
		fail("initialize, sent before the early signal, answered %d times", answers["1"])
	}
	res.retries = checkNoRetryAfterOutput(evs, fail)
	checkAgentAnswers(agent, fail)
	// The exit, and what is left.
	if sig, ok := platform.ExitSignal(ps); ok {
		fail("acp-guard was killed by %v", sig)
	} else if want := sc.expectedExit(res.stderr); ps.ExitCode() != want {
		fail("exit code %d, want %d", ps.ExitCode(), want)
	}
	if agent.pid > 0 {
		if err := acptest.WaitGroupGone(agent.pid); err != nil {
			fail("agent process group %d: %v", agent.pid, err)
			_ = platform.KillGroup(agent.pid, platform.SIGKILL)
		}
	}
	for _, bad := range []string{"panic:", "DATA RACE", "fatal error:"} {
		if strings.Contains(res.stderr, bad) {
			fail("acp-guard's stderr holds %q", bad)
		}
	}
	res.dropped = map[string]int{}
	for _, m := range countRe.FindAllStringSubmatch(res.stderr, -1) {
		n, _ := strconv.Atoi(m[2])
		res.dropped[m[1]] += n
	}
	// The fast path (transport/fast.go): a frame it wrote that the guard
	// would not have forwarded is a violation.
	for _, m := range fastRe.FindAllStringSubmatch(res.stderr, -1) {
		n, _ := strconv.Atoi(m[2])
		if m[1] == "pass_misjudged" && n > 0 {
			fail("%d frames written on the fast path were not to be forwarded", n)
		}
		res.passed += n * boolInt(m[1] == "passed_fast")
	}
}

var fastRe = regexp.MustCompile(`(passed_fast|pass_misjudged)=(\d+)`)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkStdout checks every line the client read — the agent's own,
// unchanged, or a valid frame of acp-guard's — and the answers among them:
// only to ids the client sent, at most once each, never a proxy id. It
// returns the answers per id.
func checkStdout(c *faultClient, agent agentLog, v *acpschema.Validator, fail func(string, ...any)) map[string]int {
	answers := map[string]int{}
	for _, raw := range c.lines {
		line := bytes.TrimRight(raw, "\r\n")
		if agent.wrote[string(line)] {
			countAnswer(line, answers)
			continue
		}
		if !utf8.Valid(line) || !json.Valid(line) {
			fail("stdout line is neither the agent's own nor valid UTF-8 JSON: %q", clipQ(line))
			continue
		}
		if v != nil {
			m, _ := acptest.Parse(line)
			method := m.Method
			if method == "" {
				method = c.sent[string(m.ID)]
			}
			if _, err := v.Validate(acpschema.Agent, line, method); err != nil {
				fail("acp-guard's frame is not valid ACP (%s): %v: %s", method, err, clipQ(line))
			}
		}
		countAnswer(line, answers)
	}
	for id, n := range answers {
		switch {
		case strings.HasPrefix(id, `"acp-guard:`):
			fail("the proxy's own id %s reached the client", id)
		case id == "null":
		case c.sent[id] == "":
			fail("an answer to id %s, which the client never sent (%d)", id, n)
		case n > 1:
			fail("request %s (%s) answered %d times", id, c.sent[id], n)
		}
	}
	return answers
}

// checkAgentAnswers: the agent got at most one answer per request of its
// own, and none it did not ask for.
func checkAgentAnswers(agent agentLog, fail func(string, ...any)) {
	got := map[string]int{}
	for _, l := range agent.read {
		m, err := acptest.Parse(l)
		if err != nil || m.Method != "" || m.ID == nil {
			continue
		}
		id := string(m.ID)
		if got[id]++; !agent.asked[id] {
			fail("the agent got an answer to id %s, which it never sent", id)
		} else if got[id] == 2 {
			fail("the agent got answer %s twice", id)
		}
	}
}

// countAnswer counts line if it is a response.
func countAnswer(line []byte, answers map[string]int) {
	if m, err := acptest.Parse(line); err == nil && m.IsResponse() && (m.Result != nil || m.Error != nil) {
		answers[string(m.ID)]++
	}
}

func clipQ(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func readTranscript(path string) []replay.Event {
	evs, _ := replay.ReadFile(path)
	return evs
}

// checkNoRetryAfterOutput walks the transcript in the order acp-guard
// handled frames: a retry (a session/prompt of acp-guard's own) must not
// follow output of the attempt before it that reached the client — a
// message or thought chunk, a tool call, a plan, a request of the
// agent's, a line that is not JSON. It returns the retries seen.
func checkNoRetryAfterOutput(evs []replay.Event, fail func(string, ...any)) int {
	output, retries := false, 0
	for _, e := range evs {
		switch {
		case e.Dir == replay.DirC2A && e.IsJSON():
			m, err := acptest.Parse(e.Msg)
			if err != nil || m.Method != "session/prompt" {
				continue
			}
			if !e.Original() {
				retries++
				if output {
					fail("a retry (%s) was sent after the attempt's output had reached the client", m.ID)
				}
			}
			output = false
		case e.Dir == replay.DirA2C && e.Original() && !e.Suppressed:
			if !e.IsJSON() {
				output = true
				continue
			}
			m, err := acptest.Parse(e.Msg)
			if err != nil {
				continue
			}
			if m.Method != "" && m.ID != nil {
				output = true // a request of the agent's: an effect
				continue
			}
			var p struct {
				Update struct {
					Kind string `json:"sessionUpdate"`
				} `json:"update"`
			}
			if m.Method == "session/update" && json.Unmarshal(m.Params, &p) == nil {
				switch p.Update.Kind {
				case "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan":
					output = true
				}
			}
		}
	}
	return retries
}
