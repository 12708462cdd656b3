package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestAgentFlagsAreTheAgents: without "--", everything after the agent's
// name belongs to the agent, and its exit code is passed through.
func TestAgentFlagsAreTheAgents(t *testing.T) {
	for _, args := range [][]string{
		{"--log-level", "error", "sh", "-c", "cat; exit 3"},
		{"--log-level", "error", "--", "sh", "-c", "cat; exit 3"},
		{"run", "--log-level", "error", "sh", "-c", "cat; exit 3"},
	} {
		var out, errOut bytes.Buffer
		in := strings.NewReader("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n")
		code := run(context.Background(), args, in, &out, &errOut)
		if code != 3 {
			t.Errorf("%q: exit code %d, want 3 (stderr %q)", args, code, errOut.String())
		}
		if got := out.String(); got != "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n" {
			t.Errorf("%q: relayed %q", args, got)
		}
	}
}

func TestNotFoundAgentExitCode(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--", "no-such-agent-acp-guard-test"}, strings.NewReader(""), &out, &errOut)
	if code != 127 || !strings.Contains(errOut.String(), "not found") {
		t.Errorf("exit code %d, stderr %q; want 127 and a clear message", code, errOut.String())
	}
}

// Every command's --help shows an example.
func TestEveryCommandHasAnExample(t *testing.T) {
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		skip := c.Hidden || c.Name() == "help" || c.Name() == "completion" || (c.Parent() != nil && c.Parent().Name() == "completion")
		if !skip {
			if c.Example == "" {
				t.Errorf("%s has no --help example", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(newRootCmd(&streams{}))
}
