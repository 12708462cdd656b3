package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
)

// Attempt is one prompt an agent received (the attempts file: the agents
// write "start PID N MODEL UNIXNANO" when a prompt arrives and "fail …" or
// "ok …" before answering it; N numbers the agent's prompts from 1, so
// N = 1 is the session's own prompt and N > 1 a retry).
type Attempt struct {
	PID, N     int
	Start, End time.Time
	Failed     bool
	Done       bool
}

func readAttempts(path string) []Attempt {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []Attempt
	open := map[[2]int]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			continue // a line being written
		}
		pid, _ := strconv.Atoi(fs[1])
		n, _ := strconv.Atoi(fs[2])
		ns, _ := strconv.ParseInt(fs[4], 10, 64)
		at, k := time.Unix(0, ns), [2]int{pid, n}
		switch fs[0] {
		case "start":
			open[k] = len(out)
			out = append(out, Attempt{PID: pid, N: n, Start: at})
		case "fail", "ok":
			if i, ok := open[k]; ok {
				out[i].End, out[i].Failed, out[i].Done = at, fs[0] == "fail", true
			}
		}
	}
	return out
}

// Result is what one run measured.
type Result struct {
	N                int
	Store            string
	Retries, Initial int
	Outage           time.Duration // from the prompts to the end of the outage
	StoreDown        time.Duration // NATS killed (0: never), from the prompts
	StoreUp          time.Duration // NATS started again

	// Answers counts the sessions' first answers by outcome: "ok" (end_turn
	// after the outage), or the ProviderError's recovery.reason.
	Answers map[string]int
	Extra   int // answers after a session's first (each one a failure)

	// Attempts that reached the agents before the outage ended.
	OwnInOutage, RetriesInOutage int
	// Windows are the retries during the outage per window of the
	// policy's schedule after the first failure ([0,1), [1,3), [3,7) …
	// times Initial); MaxPerWindow the most in one.
	Windows      []int
	MaxPerWindow int
	// Release: successes after the outage ended, from its end.
	ReleaseFirst, ReleaseLast time.Duration
	BusiestRelease            int // most successes starting within one 100 ms
	// Probes is how many probe leases the proxies were granted.
	Probes int
	// FellBack counts proxies that logged "circuit store unavailable"
	// while the store was up before any fault; FellBackLate those that
	// logged it more than the grace after the store came back (how soon a
	// healed store serves again is a matter of load as much as of the
	// code); Unavailable those that logged it at all.
	FellBack, FellBackLate, Unavailable int
	// UnavailableBeforeKill counts proxies that logged it before the
	// store was killed (or at all, for a run that never kills it).
	UnavailableBeforeKill int
	// Resumed: from the store's restart to each proxy's "circuit store
	// recovered" (first and last of them; Resumers how many logged it).
	ResumedFirst, ResumedLast time.Duration
	Resumers                  int
	// FailedAfterHeal: the circuit calls that failed after the store's
	// restart (or a fault's healing), and the last of them, from it — the
	// time it took the proxies that needed the store to have it again
	// (seen with Config.DebugLog only).
	FailedAfterHeal     int
	LastFailedAfterHeal time.Duration
	// FailedAfterHealErrs tallies those calls by the whole second after
	// healing and their error (numbers elided), for diagnosis.
	FailedAfterHealErrs map[string]int
	// RetriesAfterRestart are the retries per policy window from the
	// restart to the end of the outage (sharing again: at most 2 each).
	MaxPerWindowAfterRestart int
	// Circuits is each circuit's state at the end ("closed", "open", …).
	Circuits []string
	Elapsed  time.Duration
	Load     [2][3]float64 // load average at the start and the end
}

func (r *run) result(extra int) (*Result, error) {
	res := &Result{N: r.cfg.N, Store: r.cfg.Store, Retries: r.cfg.Retries, Initial: r.cfg.Initial,
		Answers: map[string]int{}, Extra: extra, Elapsed: time.Since(r.sent)}
	res.Load = [2][3]float64{r.loadStart, loadAvg()}
	if r.outageEnded {
		res.Outage = r.outageEnd.Sub(r.sent)
	}
	if r.storeKilled {
		res.StoreDown = r.storeDown.Sub(r.sent)
	}
	if !r.storeUp.IsZero() {
		res.StoreUp = r.storeUp.Sub(r.sent)
	}
	for _, p := range r.proxies {
		f, ok := p.first("3")
		if !ok {
			res.Answers["unanswered"]++
			continue
		}
		res.Answers[outcome(f)]++
	}
	as := readAttempts(r.attempts)
	r.attemptFigures(res, as)
	r.logFigures(res)
	recs, err := r.finalCircuits()
	if err != nil {
		res.Circuits = []string{"unreadable: " + err.Error()}
	}
	for _, rec := range recs {
		res.Circuits = append(res.Circuits, rec.StateAt(time.Now()))
	}
	return res, nil
}

// outcome names a session's first answer.
func outcome(f frame) string {
	if f.Error == nil {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		if json.Unmarshal(f.Result, &r) == nil && r.StopReason == "end_turn" {
			return "ok"
		}
		return "result:" + r.StopReason
	}
	var d struct {
		PE struct {
			Recovery struct {
				Reason string `json:"reason"`
			} `json:"recovery"`
		} `json:"providerError"`
	}
	if json.Unmarshal(f.Error.Data, &d) == nil && d.PE.Recovery.Reason != "" {
		return d.PE.Recovery.Reason
	}
	return fmt.Sprintf("error %d", f.Error.Code)
}

func (r *run) attemptFigures(res *Result, as []Attempt) {
	end := r.outageEnd
	if !r.outageEnded {
		end = time.Now()
	}
	var first time.Time
	var retries []time.Time
	var releases []time.Duration
	for _, a := range as {
		if a.Start.Before(end) {
			if a.N == 1 {
				res.OwnInOutage++
			} else {
				res.RetriesInOutage++
				retries = append(retries, a.Start)
			}
			if a.Failed && (first.IsZero() || a.End.Before(first)) {
				first = a.End
			}
		} else if a.Done && !a.Failed {
			releases = append(releases, a.Start.Sub(end))
		}
	}
	res.Windows = windows(retries, first, time.Duration(r.cfg.Initial)*time.Second)
	for _, w := range res.Windows {
		res.MaxPerWindow = max(res.MaxPerWindow, w)
	}
	if !r.storeUp.IsZero() {
		var after []time.Time
		for _, t := range retries {
			if t.After(r.storeUp) {
				after = append(after, t)
			}
		}
		for _, w := range windows(after, first, time.Duration(r.cfg.Initial)*time.Second) {
			res.MaxPerWindowAfterRestart = max(res.MaxPerWindowAfterRestart, w)
		}
	}
	slices.Sort(releases)
	if len(releases) > 0 {
		res.ReleaseFirst, res.ReleaseLast = releases[0], releases[len(releases)-1]
		hist := map[time.Duration]int{}
		for _, d := range releases {
			hist[d/(100*time.Millisecond)]++
		}
		for _, n := range hist {
			res.BusiestRelease = max(res.BusiestRelease, n)
		}
	}
}

// windows counts ts in the windows of a doubling schedule after first:
// [first, +u), [+u, +3u), [+3u, +7u) …; the first window holds the
// sessions' first retries (the policy's initial delay).
func windows(ts []time.Time, first time.Time, u time.Duration) []int {
	if first.IsZero() || u <= 0 {
		return nil
	}
	var out []int
	for _, t := range ts {
		d := t.Sub(first)
		k := 0
		for bound := u; d >= bound; bound = 2*bound + u {
			k++
		}
		for len(out) <= k {
			out = append(out, 0)
		}
		out[k]++
	}
	return out
}

func (r *run) logFigures(res *Result) {
	r.mu.Lock()
	logs := append([]LogEvent(nil), r.logs...)
	r.mu.Unlock()
	fell, late, unavail, early, resumed := map[int]bool{}, map[int]bool{}, map[int]bool{}, map[int]bool{}, map[int]time.Time{}
	for _, e := range logs {
		switch e.Kind {
		case "probe":
			res.Probes++
		case "unavailable":
			unavail[e.Proxy] = true
			if !r.storeKilled || e.At.Before(r.storeDown) {
				early[e.Proxy] = true
			}
			switch {
			case !r.storeKilled || e.At.Before(r.storeDown):
				fell[e.Proxy] = true
			case !r.storeUp.IsZero() && e.At.After(r.storeUp.Add(r.storeGrace())):
				late[e.Proxy] = true
			}
		case "failed":
			if !r.storeUp.IsZero() && e.At.After(r.storeUp) {
				res.FailedAfterHeal++
				if res.FailedAfterHealErrs == nil {
					res.FailedAfterHealErrs = map[string]int{}
				}
				res.FailedAfterHealErrs[fmt.Sprintf("+%ds %s", int(e.At.Sub(r.storeUp).Seconds()), e.Err)]++
				res.LastFailedAfterHeal = max(res.LastFailedAfterHeal, e.At.Sub(r.storeUp))
			}
		case "recovered":
			if !r.storeUp.IsZero() && e.At.After(r.storeUp) {
				if _, ok := resumed[e.Proxy]; !ok {
					resumed[e.Proxy] = e.At
				}
			}
		}
	}
	res.FellBack, res.FellBackLate, res.Unavailable, res.UnavailableBeforeKill, res.Resumers = len(fell), len(late), len(unavail), len(early), len(resumed)
	var ds []time.Duration
	for _, at := range resumed {
		ds = append(ds, at.Sub(r.storeUp))
	}
	slices.Sort(ds)
	if len(ds) > 0 {
		res.ResumedFirst, res.ResumedLast = ds[0], ds[len(ds)-1]
	}
}

// storeGrace is how long after a restart a proxy may still report the
// store unavailable without having fallen back while it was up: the
// client's reconnect wait (about a second) plus a store call's timeout.
func (r *run) storeGrace() time.Duration { return 5 * time.Second }

// Check reports what keeps res from meeting the conditions:
// every session answered exactly once with the provider's success; with
// circuits, no proxy falling back to its own schedule while the store was
// up, every circuit closed at the end, and at most two retries per
// cooldown window — or, for a run whose store was killed and started
// again (the proxies fall back while it is away, as they must), sharing
// resumed after the restart.
func (res *Result) Check() []string {
	var bad []string
	if res.Answers["ok"] != res.N || res.Extra != 0 {
		bad = append(bad, fmt.Sprintf("answers %v, %d extra: want %d ok, each once", res.Answers, res.Extra, res.N))
	}
	if res.Store == "off" {
		return bad
	}
	switch {
	case res.StoreDown == 0 && res.MaxPerWindow > 2:
		bad = append(bad, fmt.Sprintf("%d retries in one cooldown window (%v), want at most 2", res.MaxPerWindow, res.Windows))
	case res.StoreDown > 0 && res.Unavailable > 0 && res.Resumers == 0:
		bad = append(bad, "no proxy used the store again after its restart")
	}
	if n := res.FellBack + res.FellBackLate; n > 0 {
		bad = append(bad, fmt.Sprintf("%d proxies fell back while the store was up", n))
	}
	for _, s := range res.Circuits {
		if s != circuit.StateClosed {
			bad = append(bad, "a circuit is "+s+" at the end")
		}
	}
	return bad
}

// loadAvg reads /proc/loadavg (zeros where there is none).
func loadAvg() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	fs := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(fs); i++ {
		l[i], _ = strconv.ParseFloat(fs[i], 64)
	}
	return l
}
