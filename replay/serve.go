package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	// Speed scales the recorded pace: 2 plays twice as fast. 0 means 1.
	Speed float64
	// NoDelay emits everything as soon as its inputs have arrived.
	NoDelay bool
	// Logger receives divergence and stall reports. Nil discards.
	Logger *slog.Logger

	// now and after replace the wall clock in tests; lingering, if set,
	// is called when Serve starts to stay after a lingering exit.
	now       func() time.Time
	after     func(time.Duration) <-chan time.Time
	lingering func()
}

// Serve acts as the agent recorded in events: it reads the client's frames
// from in, writes the recorded agent's frames to out and its stderr lines to
// errOut, and returns the recorded exit status (128+N for a signal N) when it
// reaches the recorded exit. See the package documentation for how requests
// are matched. Without a recorded exit it serves until in ends and returns 0.
// It returns an error when writing to out fails or ctx ends.
//
// Serve reads in on a goroutine of its own; a Read cannot be interrupted, so
// when Serve returns first that goroutine exits at in's next line or EOF.
func Serve(ctx context.Context, events []Event, opts ServeOptions, in io.Reader, out io.Writer, errOut io.Writer) (exitCode int, err error) {
	if opts.Speed < 0 {
		return 1, fmt.Errorf("replay: speed %v: must not be negative", opts.Speed)
	}
	s := newServer(events, opts, out, errOut)
	inputs := make(chan input, 16)
	stop := make(chan struct{})
	defer close(stop)
	go readInput(in, MaxLineBytes, inputs, stop)

	for {
		st := s.advance()
		switch st.kind {
		case stExit:
			return st.code, nil
		case stLinger:
			s.log.Info("replay: the recorded agent was stopped after its client left; staying until stopped")
			if opts.lingering != nil {
				opts.lingering()
			}
			<-ctx.Done()
			return st.code, nil
		case stFailed:
			return 1, st.err
		case stBlocked:
			if inputs == nil {
				s.log.Warn("replay: client closed its input before the recording ended",
					"line", st.line, "method", st.method)
				return 0, nil
			}
		case stDone:
			if inputs == nil {
				return 0, nil
			}
		}
		var timer <-chan time.Time
		if st.kind == stTimer {
			timer = s.after(st.delay)
		}
		select {
		case <-ctx.Done():
			return 1, ctx.Err()
		case <-timer:
		case in, ok := <-inputs:
			switch {
			case !ok:
				inputs, s.inputClosed = nil, true
			case in.err != nil:
				s.log.Warn("replay: reading client input", "err", in.err)
			default:
				if err := s.receive(in.line); err != nil {
					return 1, err
				}
			}
		}
	}
}

// input is one line from the client, or a read error.
type input struct {
	line []byte
	err  error
}

// readInput owns in: it sends each line (its own copy, without "\n") and
// closes inputs at EOF or after a read error. It exits then, or as soon as
// stop is closed and it is next able to send.
func readInput(in io.Reader, max int, inputs chan<- input, stop <-chan struct{}) {
	defer close(inputs)
	send := func(i input) bool {
		select {
		case inputs <- i:
			return true
		case <-stop:
			return false
		}
	}
	br := bufio.NewReaderSize(in, 64<<10)
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		switch {
		case tooLong:
			if !send(input{err: fmt.Errorf("%w (limit %d bytes): line dropped", ErrLineTooLong, max)}) {
				return
			}
		case len(buf) > 0:
			line := buf
			if line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			if len(line) > 0 && !send(input{line: line}) {
				return
			}
		}
		buf, tooLong = nil, false
		if err != nil {
			if err != io.EOF {
				send(input{err: err})
			}
			return
		}
	}
}

// Server states returned by advance.
type stateKind int

const (
	stBlocked  stateKind = iota // waiting for a client frame
	stTimer                     // waiting for the next recorded time
	stDone                      // the recording is played, without an exit
	stExit                      // the recorded exit was reached
	stLinger                    // the recorded agent was killed after its client left: stay until stopped
	stAwaitEOF                  // the recorded exit followed the client's EOF: wait for the live one
	stFailed                    // writing to the client failed
)

type state struct {
	kind   stateKind
	delay  time.Duration // stTimer
	code   int           // stExit
	err    error         // stFailed
	line   int           // stBlocked: transcript line awaited
	method string        // stBlocked: method awaited, if a request
}

// advance plays the recording from the cursor until it must wait.
func (s *server) advance() state {
	for s.pos < len(s.items) {
		it := &s.items[s.pos]
		if it.kind == itemExit && it.afterEOF && !s.inputClosed {
			return state{kind: stAwaitEOF}
		}
		switch it.kind {
		case itemRequest:
			if !s.reqs[it.req].received {
				return state{kind: stBlocked, line: it.line, method: s.reqs[it.req].method}
			}
			s.setAnchor(it.tMs, s.now())
			s.pos++
			continue
		case itemResponse:
			if s.responses[it.key] == 0 {
				return state{kind: stBlocked, line: it.line}
			}
			s.responses[it.key]--
			s.setAnchor(it.tMs, s.now())
			s.pos++
			continue
		}
		at := s.now()
		if !s.opts.NoDelay {
			target := s.anchorWall.Add(s.scale(it.tMs - s.anchorMs))
			if d := target.Sub(at); d > 0 {
				return state{kind: stTimer, delay: d}
			}
			at = target
		}
		s.setAnchor(it.tMs, at)
		s.pos++
		switch it.kind {
		case itemFrame:
			if err := s.emit(it); err != nil {
				return state{kind: stFailed, err: err}
			}
		case itemStderr:
			if _, err := io.WriteString(s.errOut, it.text+"\n"); err != nil {
				s.log.Warn("replay: writing stderr", "err", err)
			}
		case itemExit:
			if it.lingers {
				return state{kind: stLinger, code: it.code}
			}
			return state{kind: stExit, code: it.code}
		}
	}
	return state{kind: stDone}
}

func (s *server) setAnchor(ms int64, wall time.Time) { s.anchorMs, s.anchorWall = ms, wall }

func (s *server) scale(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	return time.Duration(float64(ms) * float64(time.Millisecond) / s.speed)
}

// emit writes one recorded agent frame, with the live id when it answers a
// live request.
func (s *server) emit(it *item) error {
	frame := it.frame
	if it.req >= 0 && it.fi.isError {
		s.lastError[s.reqs[it.req].method] = it
	}
	if it.req >= 0 && s.reqs[it.req].liveID != nil {
		frame = withID(frame, it.fi, s.reqs[it.req].liveID)
	}
	s.scratch = append(s.scratch[:0], frame...)
	if it.crlf {
		s.scratch = append(s.scratch, '\r')
	}
	s.scratch = append(s.scratch, '\n')
	if _, err := s.out.Write(s.scratch); err != nil {
		return fmt.Errorf("replay: writing to client: %w", err)
	}
	return nil
}

// receive handles one line from the client.
func (s *server) receive(line []byte) error {
	fi := frameInfo{kind: kindOther}
	if isJSON(line) {
		fi = parseFrame(line)
	}
	switch fi.kind {
	case kindRequest:
		return s.request(fi)
	case kindNotification:
		s.log.Debug("replay: client notification consumed", "method", fi.method)
	case kindResponse:
		key := idKey(fi.id)
		if s.agentReqs[key] == 0 {
			s.log.Warn("replay: client answered a request the recording did not make", "id", string(fi.id))
			return nil
		}
		s.agentReqs[key]--
		s.responses[key]++
	default:
		s.log.Warn("replay: client sent a line that is not a JSON-RPC message", "bytes", len(line))
	}
	return nil
}

// request matches a live request with the next recorded request of its
// method, or answers it with the divergence error.
func (s *server) request(fi frameInfo) error {
	queue := s.byMethod[fi.method]
	if len(queue) == 0 && s.lastError[fi.method] != nil {
		// A request the recording has no counterpart for, whose method
		// last failed: a failing provider keeps failing, so a guard's
		// retry sees the recorded failure again.
		last := s.lastError[fi.method]
		s.log.Info("replay: repeated request answered with its method's last recorded error", "method", fi.method, "id", string(fi.id))
		frame := append(withID(last.frame, last.fi, fi.id), '\n')
		if _, err := s.out.Write(frame); err != nil {
			return fmt.Errorf("replay: writing to client: %w", err)
		}
		return nil
	}
	if len(queue) == 0 {
		expected := "end of recording"
		for s.firstOpen < len(s.reqs) && s.reqs[s.firstOpen].received {
			s.firstOpen++
		}
		if s.firstOpen < len(s.reqs) {
			expected = s.reqs[s.firstOpen].method
		}
		msg := fmt.Sprintf("replay: client diverged from recording: expected %s, got %s", expected, fi.method)
		s.log.Warn("replay: client diverged from recording", "expected", expected, "method", fi.method, "id", string(fi.id))
		resp := []byte(`{"jsonrpc":"2.0","id":`)
		resp = append(resp, fi.id...)
		resp = append(resp, `,"error":{"code":-32603,"message":`...)
		resp = appendString(resp, msg)
		resp = append(resp, "}}\n"...)
		if _, err := s.out.Write(resp); err != nil {
			return fmt.Errorf("replay: writing to client: %w", err)
		}
		return nil
	}
	idx := queue[0]
	s.byMethod[fi.method] = queue[1:]
	r := &s.reqs[idx]
	r.received, r.liveID = true, fi.id
	if s.pos < len(s.items) && s.items[s.pos].kind == itemRequest && s.items[s.pos].req != idx && !s.reqs[s.items[s.pos].req].received {
		s.log.Info("replay: client request ahead of the recording; held until the recording reaches it",
			"method", fi.method, "id", string(fi.id), "waiting_for", s.reqs[s.items[s.pos].req].method)
	}
	return nil
}

// itemKind is one step of the agent's side of the recording.
type itemKind int

const (
	itemFrame    itemKind = iota // the agent sent a frame
	itemStderr                   // the agent wrote a stderr line
	itemExit                     // the agent exited
	itemRequest                  // the agent received a request: wait for it
	itemResponse                 // the agent received a response: wait for it
)

type item struct {
	kind  itemKind
	tMs   int64
	line  int
	frame []byte    // itemFrame: the exact bytes
	crlf  bool      // itemFrame
	fi    frameInfo // itemFrame
	req   int       // itemFrame: the request a response answers, or -1; itemRequest: its index
	key   string    // itemResponse: idKey of the id answered
	text  string    // itemStderr
	code  int       // itemExit
	// itemExit: the recorded client had closed its input before the exit
	// (played only after the live client closes its own), and a signal
	// ended the agent then (the proxy's grace kill: the served agent
	// lingers, as the recorded one did, until it is stopped).
	afterEOF, lingers bool
}

// recordedRequest is a request the recorded agent received.
type recordedRequest struct {
	method   string
	received bool   // the live client sent its counterpart
	liveID   []byte // the live request's raw id
}

type server struct {
	opts        ServeOptions
	log         *slog.Logger
	out, errOut io.Writer
	speed       float64
	now         func() time.Time
	after       func(time.Duration) <-chan time.Time
	items       []item
	reqs        []recordedRequest
	byMethod    map[string][]int // unmatched recorded requests per method, in order
	firstOpen   int              // no request before this index is unmatched
	agentReqs   map[string]int   // idKey → agent→client requests awaiting an answer
	responses   map[string]int   // idKey → live client answers not yet consumed
	lastError   map[string]*item // method → the last recorded error response emitted for it
	inputClosed bool             // the live client closed its input
	pos         int
	anchorMs    int64
	anchorWall  time.Time
	scratch     []byte
}

// newServer builds the agent's view of the recording (see the package
// documentation): what it received (c2a frames that were not suppressed)
// and what it sent (a2c frames without via, stderr, exit).
func newServer(events []Event, opts ServeOptions, out, errOut io.Writer) *server {
	s := &server{
		opts: opts, log: opts.Logger, out: out, errOut: errOut, speed: opts.Speed,
		now: opts.now, after: opts.after,
		byMethod: map[string][]int{}, agentReqs: map[string]int{}, responses: map[string]int{},
		lastError: map[string]*item{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.speed == 0 {
		s.speed = 1
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.after == nil {
		s.after = time.After
	}
	s.anchorWall = s.now()
	s.load(events)
	return s
}

// load turns the events into the agent's steps and links each recorded
// response to the request it answers.
func (s *server) load(events []Event) {
	pending := map[string][]int{} // idKey → recorded requests not yet answered
	sent := map[string]int{}      // idKey → agent→client requests not yet answered
	for _, ev := range events {
		switch {
		case ev.Dir == DirC2A && !ev.Suppressed && ev.IsJSON():
			fi := parseFrame(ev.Bytes())
			switch fi.kind {
			case kindRequest:
				idx := len(s.reqs)
				s.reqs = append(s.reqs, recordedRequest{method: fi.method})
				s.byMethod[fi.method] = append(s.byMethod[fi.method], idx)
				key := idKey(fi.id)
				pending[key] = append(pending[key], idx)
				s.items = append(s.items, item{kind: itemRequest, tMs: ev.TMs, line: ev.Line, req: idx})
			case kindResponse:
				// Wait only for answers to requests the agent is known to
				// have sent; anything else could never arrive.
				if key := idKey(fi.id); sent[key] > 0 {
					sent[key]--
					s.items = append(s.items, item{kind: itemResponse, tMs: ev.TMs, line: ev.Line, key: key})
				}
			}
		case ev.Dir == DirA2C && ev.Original():
			it := item{kind: itemFrame, tMs: ev.TMs, line: ev.Line, frame: ev.Bytes(), crlf: ev.CRLF, req: -1}
			if ev.IsJSON() {
				it.fi = parseFrame(it.frame)
			}
			switch key := idKey(it.fi.id); it.fi.kind {
			case kindResponse:
				if q := pending[key]; len(q) > 0 {
					it.req, pending[key] = q[0], q[1:]
				}
			case kindRequest:
				sent[key]++
				s.agentReqs[key]++
			}
			s.items = append(s.items, it)
		case ev.Dir == DirStderr:
			s.items = append(s.items, item{kind: itemStderr, tMs: ev.TMs, line: ev.Line, text: ev.Text()})
		case ev.Dir == DirExit:
			code := 0
			if ev.Code != nil {
				code = *ev.Code
			}
			s.items = append(s.items, item{kind: itemExit, tMs: ev.TMs, line: ev.Line, code: exitStatus(code, ev.Signal),
				afterEOF: ev.ClientClosed, lingers: ev.ClientClosed && ev.Signal != ""})
		}
	}
}

func isJSON(b []byte) bool { return json.Valid(b) }
