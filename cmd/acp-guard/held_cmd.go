package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/policy"
)

// heldOptions are the flags of `acp-guard held` and its actions.
type heldOptions struct {
	store    circuitOptions
	stateDir string
	json     bool
	wait     time.Duration
	holder   string

	out, err io.Writer
}

func init() { subcommands = append(subcommands, newHeldCmd) }

func newHeldCmd(s *streams) *cobra.Command {
	o := &heldOptions{}
	cmd := &cobra.Command{
		Use:   "held",
		Short: "List the prompts held for recovery, or move one on (retry-now, skip, stop)",
		Long: `held lists the prompts that acp-guard processes sharing a store hold for
recovery — waiting for a reset, for a retry, or parked on a circuit — with
their session, agent, failure code, state, since when, the next attempt,
the holding process and the actions it offers. The store is the circuits'
(--circuits, else $ACP_GUARD_CIRCUITS, else the file in the state
directory; --circuit-namespace selects the namespace). A prompt is listed
once it has been held for a second.

  acp-guard held retry-now SESSION   send the retry now
  acp-guard held skip SESSION        switch to the next fallback model now
  acp-guard held stop SESSION        stop recovery: the client gets the failure now

An action is written to the prompt's entry; the holding process takes it
(the safety gate still decides: a turn that is no longer replay-safe is
never sent again) and writes back the resulting state, which is printed.`,
		Example: `  acp-guard held
  acp-guard held --circuits nats://10.0.0.5:4222 --json
  acp-guard held skip 3f1c9a2e-…`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.configure(cmd, s); err != nil {
				return err
			}
			return runHeldList(cmd.Context(), o)
		},
	}
	o.bind(cmd, true)
	for _, a := range []struct{ use, action, short string }{
		{"retry-now", held.ActionRetryNow, "Send a held prompt's retry now"},
		{"skip", held.ActionSkip, "Switch a held prompt to the next fallback model now"},
		{"stop", held.ActionStop, "Stop a held prompt's recovery: its client gets the failure now"},
	} {
		ao := &heldOptions{}
		action := a.action
		sub := &cobra.Command{
			Use:     a.use + " SESSION",
			Short:   a.short,
			Example: "  acp-guard held " + a.use + " 3f1c9a2e-…\n  acp-guard held " + a.use + " sess-1 --circuits nats://10.0.0.5:4222 --holder build-7/4242",
			Args:    cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := ao.configure(cmd, s); err != nil {
					return err
				}
				return runHeldAction(cmd.Context(), ao, action, args[0])
			},
		}
		ao.bind(sub, false)
		cmd.AddCommand(sub)
	}
	return cmd
}

func (o *heldOptions) bind(cmd *cobra.Command, list bool) {
	f := cmd.Flags()
	o.bindStore(cmd)
	if list {
		f.BoolVar(&o.json, "json", false, "print one JSON entry per line")
		return
	}
	f.DurationVar(&o.wait, "wait", 10*time.Second, "how long to wait for the holding process's answer")
	f.StringVar(&o.holder, "holder", "", "the holding process (host/pid, as listed) when several hold a prompt of SESSION")
}

// bindStore binds the flags that name the store (also the console's).
func (o *heldOptions) bindStore(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.store.store, "circuits", "", "the store: file (default), or nats://HOST:PORT")
	f.StringVar(&o.store.namespace, "circuit-namespace", "", "the namespace (default \"default\")")
	f.StringVar(&o.stateDir, "state-dir", "", "state directory holding the file store (default: $XDG_STATE_HOME/acp-guard)")
}

func (o *heldOptions) configure(cmd *cobra.Command, s *streams) error {
	o.out, o.err = s.out, s.err
	_, err := applyConfig(cmd.Flags(), map[string]bool{"circuits": true, "state-dir": true, "circuit-namespace": true})
	if err != nil {
		return withCode(exitUsage, err)
	}
	return nil
}

// open opens the board and returns it with the namespace's id prefix.
func (o *heldOptions) open() (*held.Board, string, error) {
	spec := strings.TrimSpace(o.store.store)
	if spec == "off" || spec == "memory" {
		return nil, "", withCode(exitUsage, fmt.Errorf("held prompts are shared through the circuits' store, and --circuits is %s", spec))
	}
	ns := o.store.namespace
	if ns == "" {
		ns = circuit.DefaultNamespace
	}
	prefix, err := held.NamespacePrefix(ns)
	if err != nil {
		return nil, "", withCode(exitUsage, fmt.Errorf("--circuit-namespace: %w", err))
	}
	dir := o.stateDir
	if dir == "" {
		if dir, err = policy.DefaultStateDir(); err != nil {
			return nil, "", withCode(exitFailure, err)
		}
	}
	st, err := held.OpenStore(spec, held.Options{Dir: dir, Name: "acp-guard held"})
	if err != nil {
		return nil, "", withCode(exitUsage, err)
	}
	return held.NewBoard(st, nil), prefix, nil
}

func runHeldList(ctx context.Context, o *heldOptions) error {
	b, prefix, err := o.open()
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now := time.Now()
	list, err := b.Held(ctx, prefix, now)
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("listing held prompts: %w", err))
	}
	if o.json {
		enc := json.NewEncoder(o.out)
		for _, st := range list {
			if err := enc.Encode(st.Entry); err != nil {
				return err
			}
		}
		return nil
	}
	return writeHeldTable(o.out, list, now)
}

// writeHeldTable prints held prompts as an aligned table.
func writeHeldTable(w io.Writer, list []held.Stored, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tREQUEST\tAGENT\tCODE\tSTATE\tSINCE\tNEXT ATTEMPT\tHOLDER\tACTIONS")
	for _, st := range list {
		e := st.Entry
		next := "-"
		if e.Next != nil {
			next = stamp(*e.Next) + " (" + untilText(e.Next.Sub(now)) + ")"
		}
		actions := strings.Join(e.Offered, ",")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(e.SessionID), cell(e.RequestID), cell(e.Agent), cell(e.Code),
			e.State, stamp(e.Since), next, cell(e.Host+"/"+strconv.Itoa(e.PID)), cell(actions))
	}
	return tw.Flush()
}

func untilText(d time.Duration) string {
	if d <= 0 {
		return "due"
	}
	return "in " + d.Round(time.Second).String()
}

// runHeldAction asks the process holding session's prompt to take action
// and prints the state it answers with.
func runHeldAction(ctx context.Context, o *heldOptions, action, session string) error {
	b, prefix, err := o.open()
	if err != nil {
		return err
	}
	defer b.Close()
	out, err := askHeld(ctx, b, prefix, heldTarget{Session: session, Holder: o.holder}, action, o.wait)
	if err != nil {
		return withCode(exitFailure, err)
	}
	fmt.Fprintf(o.out, "%s %s: %s → %s\n", action, cell(session), out.From, out.To)
	return nil
}

// heldTarget names the held prompt an action is for: its session, the
// holding process (host/pid) when several hold one, and — from a page that
// showed one particular hold — that hold's number, so that an action on a
// prompt whose session has moved on is refused rather than applied to
// whatever the session holds now.
type heldTarget struct {
	Session string
	Holder  string // "" : the one process holding a prompt of Session
	Hold    uint64 // 0 : the prompt's current hold
}

// heldOutcome is a taken action: the prompt's state before and after.
type heldOutcome struct{ From, To string }

// askHeld is the one path an operator's action on a held prompt takes
// (`acp-guard held retry-now|skip|stop` and the console): it finds the
// held prompt, writes the request to its entry and waits up to wait for
// the holding process's answer; the holder's safety gate decides, and a
// refusal is the error.
func askHeld(ctx context.Context, b *held.Board, prefix string, tg heldTarget, action string, wait time.Duration) (heldOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+held.CallTimeout)
	defer cancel()
	list, err := b.Held(ctx, prefix, time.Now())
	if err != nil {
		return heldOutcome{}, fmt.Errorf("listing held prompts: %w", err)
	}
	st, err := pickHeld(list, tg)
	if err != nil {
		return heldOutcome{}, err
	}
	session := tg.Session
	req := held.Request{ID: newRequestID(), Action: action, By: "operator", At: time.Now().UTC()}
	if _, err := b.Ask(ctx, st.ID, req, time.Now()); err != nil {
		return heldOutcome{}, fmt.Errorf("%s %s: %w", action, session, err)
	}
	wctx, wcancel := context.WithTimeout(ctx, wait)
	defer wcancel()
	res, err := b.Await(wctx, st.ID, req.ID, 100*time.Millisecond)
	if err != nil {
		return heldOutcome{}, fmt.Errorf("%s %s: no answer from %s/%d within %s (the request stays on the entry until the prompt's hold ends)",
			action, session, st.Entry.Host, st.Entry.PID, wait)
	}
	if res.Error != "" {
		return heldOutcome{}, fmt.Errorf("%s %s: refused by %s/%d: %s (state %s)", action, session, st.Entry.Host, st.Entry.PID, res.Error, res.State)
	}
	return heldOutcome{From: st.Entry.State, To: res.State}, nil
}

// pickHeld finds the one held prompt of tg.Session (of tg.Holder's
// process when given; in tg.Hold when given).
func pickHeld(list []held.Stored, tg heldTarget) (held.Stored, error) {
	session := tg.Session
	var found []held.Stored
	for _, st := range list {
		if st.Entry.SessionID != session {
			continue
		}
		if tg.Holder != "" && tg.Holder != st.Entry.Host+"/"+strconv.Itoa(st.Entry.PID) {
			continue
		}
		found = append(found, st)
	}
	switch len(found) {
	case 0:
		if tg.Hold != 0 {
			return held.Stored{}, fmt.Errorf("session %q has moved on: its prompt is no longer held (see acp-guard held)", session)
		}
		return held.Stored{}, fmt.Errorf("no held prompt of session %q (see acp-guard held)", session)
	case 1:
		if tg.Hold != 0 && found[0].Entry.Hold != tg.Hold {
			return held.Stored{}, fmt.Errorf("session %q has moved on: the hold shown (%d) ended, and its prompt is now %s in hold %d — reload and look again",
				session, tg.Hold, found[0].Entry.State, found[0].Entry.Hold)
		}
		return found[0], nil
	}
	var hs []string
	for _, st := range found {
		hs = append(hs, st.Entry.Host+"/"+strconv.Itoa(st.Entry.PID))
	}
	return held.Stored{}, errors.New("several processes hold a prompt of session " + strconv.Quote(session) + ": name one with --holder (" + strings.Join(hs, ", ") + ")")
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
