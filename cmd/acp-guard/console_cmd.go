package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/cmd/acp-guard/internal/console"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/presence"
)

// consoleOptions are the flags of `acp-guard console`.
type consoleOptions struct {
	held  heldOptions // the store flags, as `acp-guard held` reads them
	addr  string
	token string
	poll  time.Duration

	// ready, if set, is told the address the console listens on (tests).
	ready func(addr string)
	out   io.Writer
	err   io.Writer
}

// defaultConsoleAddr is where the console listens unless --addr says.
const defaultConsoleAddr = "127.0.0.1:7171"

func init() { subcommands = append(subcommands, newConsoleCmd) }

func newConsoleCmd(s *streams) *cobra.Command {
	o := &consoleOptions{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "A local web page over the live sessions, held prompts and circuits, with retry-now / skip / stop buttons",
		Long: `console serves a web page over the store the sessions share (--circuits,
else $ACP_GUARD_CIRCUITS, else the file in the state directory): the live
sessions (agent, model, state, turn, heartbeat; a session whose heartbeat
stopped leaves the list when its lease runs out), the last hour's
ProviderErrors by agent, code and class, the prompts held for recovery,
with retry now / skip / stop buttons, and the circuits per provider and
model with their state, failures, next probe and lease holder. The page
refreshes itself every --poll.

A button takes the same path as acp-guard held retry-now|skip|stop: the
holding process's safety gate decides, and an action on a prompt whose
session has moved on (its hold ended, or a new one began) is refused with
a message.

It listens on 127.0.0.1 only, unless --addr names another address, which
needs --token: every request must then carry the token (open the page once
as /?token=TOKEN; it sets a cookie). Actions are POSTs checked against a
per-process CSRF token embedded in the page. The page shows the held
prompts' codes and states, never frame or provider text.`,
		Example: `  acp-guard console
  acp-guard console --circuits nats://10.0.0.5:4222
  acp-guard console --addr 0.0.0.0:7171 --token "$(openssl rand -hex 16)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.held.configure(cmd, s); err != nil {
				return err
			}
			o.out, o.err = s.out, s.err
			if err := console.CheckAddr(o.addr, o.token); err != nil {
				return withCode(exitUsage, err)
			}
			return runConsole(cmd.Context(), o)
		},
	}
	o.held.bindStore(cmd)
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", defaultConsoleAddr, "listen on this address (HOST:PORT); anything but loopback needs --token")
	f.StringVar(&o.token, "token", "", "require this token of every request (needed off loopback)")
	f.DurationVar(&o.poll, "poll", 2*time.Second, "how often the page refreshes")
	return cmd
}

// consoleSource opens the stores and returns what the console reads and
// acts through, and a function closing them.
func consoleSource(o *consoleOptions) (console.Source, string, func(), error) {
	b, prefix, err := o.held.open()
	if err != nil {
		return console.Source{}, "", nil, err
	}
	spec := strings.TrimSpace(o.held.store.store)
	dir := o.held.stateDir
	if dir == "" {
		if dir, err = policy.DefaultStateDir(); err != nil {
			b.Close()
			return console.Source{}, "", nil, withCode(exitFailure, err)
		}
	}
	cs, err := circuit.OpenStore(spec, circuit.Options{Dir: dir, Name: "acp-guard console"})
	if err != nil {
		b.Close()
		return console.Source{}, "", nil, withCode(exitUsage, err)
	}
	ps, err := presence.OpenStore(spec, presence.Options{Dir: dir, Name: "acp-guard console"})
	if err != nil {
		cs.Close()
		b.Close()
		return console.Source{}, "", nil, withCode(exitUsage, err)
	}
	ns := o.held.store.namespace
	if ns == "" {
		ns = circuit.DefaultNamespace
	}
	pprefix, err := presence.Prefix(ns)
	if err != nil {
		ps.Close()
		cs.Close()
		b.Close()
		return console.Source{}, "", nil, withCode(exitUsage, fmt.Errorf("--circuit-namespace: %w", err))
	}
	desc := spec
	if desc == "" || desc == "file" {
		desc = "file " + dir
	}
	src := console.Source{
		Held:     func(ctx context.Context) ([]held.Stored, error) { return b.Held(ctx, prefix, time.Now()) },
		Circuits: cs.List,
		Live:     func(ctx context.Context, now time.Time) ([]presence.Record, error) { return ps.Live(ctx, pprefix, now) },
		Act: func(ctx context.Context, a console.Action) (string, error) {
			out, err := askHeld(ctx, b, prefix, heldTarget{Session: a.Session, Holder: a.Holder, Hold: a.Hold}, a.Action, 10*time.Second)
			if err != nil {
				return "", err
			}
			return out.From + " → " + out.To, nil
		},
	}
	return src, desc, func() { ps.Close(); cs.Close(); b.Close() }, nil
}

func runConsole(ctx context.Context, o *consoleOptions) error {
	// Ctrl-C ends the console cleanly: the server shuts down, the stores
	// close.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	src, desc, closeStores, err := consoleSource(o)
	if err != nil {
		return err
	}
	defer closeStores()
	srv, err := console.New(console.Options{Source: src, Token: o.token, Poll: o.poll, Store: desc})
	if err != nil {
		return withCode(exitFailure, err)
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("console: %w", err))
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	addr := ln.Addr().String()
	fmt.Fprintf(o.err, "acp-guard console: http://%s/ (store %s)\n", addr, desc)
	if o.token != "" {
		fmt.Fprintf(o.err, "acp-guard console: open http://%s/?token=… once with the --token given\n", addr)
	}
	if o.ready != nil {
		o.ready(addr)
	}
	// The server's goroutine ends when Serve returns: on Shutdown below,
	// or a listener failure; runConsole waits for it through done.
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return withCode(exitFailure, fmt.Errorf("console: %w", err))
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	if serr := <-done; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("console: %w", err))
	}
	return nil
}
