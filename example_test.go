package acpguard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/demoagent"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/replay"
)

// demoAgentEnv makes this test binary the demo agent (TestMain): the
// examples start it as `acp-guard demo-agent` would be started.
const demoAgentEnv = "ACPGUARD_TEST_DEMO_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(demoAgentEnv) == "1" {
		os.Exit(runDemoAgent(os.Args[1:]))
	}
	testbin.Main(m)
}

// runDemoAgent is `acp-guard demo-agent --scenario NAME` on stdio.
func runDemoAgent(args []string) int {
	fs := flag.NewFlagSet("demo-agent", flag.ContinueOnError)
	scenario := fs.String("scenario", "success", "")
	if fs.Parse(args) != nil {
		return 2
	}
	err := demoagent.Run(context.Background(), demoagent.Options{Scenario: *scenario}, os.Stdin, os.Stdout, os.Stderr)
	var exit *demoagent.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.Code
	case err != nil:
		return 1
	}
	return 0
}

// demoAgent is the command of the built-in demo agent playing scenario. A
// program would run {"acp-guard", "demo-agent", "--scenario", scenario};
// here the test binary plays it.
func demoAgent(scenario string) acpguard.Command {
	return acpguard.Command{
		Argv: []string{os.Args[0], "--scenario", scenario},
		Env:  append(os.Environ(), demoAgentEnv+"=1"),
	}
}

// The client side of the examples: three requests, then the end of its
// input.
const (
	initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"
	newSession = `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}` + "\n"
	promptTurn = `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"Say hello"}]}}` + "\n"
)

// Guard an agent command, as `acp-guard -- AGENT` does: here the demo
// agent, whose turn passes through untouched.
func ExampleRun() {
	var out bytes.Buffer
	res, err := acpguard.Run(context.Background(), acpguard.Config{}, demoAgent("success"), acpguard.Streams{
		In:  strings.NewReader(initialize + newSession + promptTurn),
		Out: &out,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("agent exit code:", res.Exit.Code)
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var f struct {
			ID     json.RawMessage
			Params struct {
				Update struct {
					SessionUpdate string
					Content       struct{ Text string }
				}
			}
			Result struct{ StopReason string }
		}
		_ = json.Unmarshal(sc.Bytes(), &f)
		switch {
		case f.Params.Update.SessionUpdate != "":
			fmt.Printf("%s: %q\n", f.Params.Update.SessionUpdate, f.Params.Update.Content.Text)
		case string(f.ID) == "3":
			fmt.Println("prompt answered:", f.Result.StopReason)
		}
	}
	// Output:
	// agent exit code: 0
	// agent_thought_chunk: "Thinking about the request."
	// agent_message_chunk: "Hello from the demo agent. "
	// agent_message_chunk: "This is the answer."
	// prompt answered: end_turn
}

// Guard an agent the caller runs itself — here the demo agent in this
// process, on pipes, playing Cursor: it reports a provider failure as text
// and ends the turn normally. The client gets one ProviderError instead
// (with the constant diagnostic of the Cursor projection).
func ExampleRunPipes() {
	agentIn, toAgent := io.Pipe()
	fromAgent, agentOut := io.Pipe()
	exited := make(chan struct{})
	go func() { // the agent: ends when its input does
		defer close(exited)
		_ = demoagent.Run(context.Background(), demoagent.Options{Scenario: "cursor-retriable"}, agentIn, agentOut, io.Discard)
		agentOut.Close()
	}()
	agent := acpguard.AgentPipes{
		Stdin: toAgent, Stdout: fromAgent, Name: "cursor-agent",
		Wait: func() acpguard.ExitStatus { <-exited; return acpguard.ExitStatus{} },
	}

	var out bytes.Buffer
	_, err := acpguard.RunPipes(context.Background(), acpguard.Config{}, agent, acpguard.Streams{
		In:  strings.NewReader(initialize + newSession + promptTurn),
		Out: &out,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		var f struct {
			ID    json.RawMessage
			Error struct {
				Message string
				Data    struct{ ProviderError acpguard.ProviderError }
			}
		}
		if json.Unmarshal([]byte(line), &f) != nil || string(f.ID) != "3" {
			continue
		}
		pe := f.Error.Data.ProviderError
		fmt.Println(f.Error.Message)
		fmt.Println(pe.Code, pe.Class, pe.Rule, pe.Recovery.Action)
	}
	// Output:
	// Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)
	// agent_transport_lost transient cursor.retriable_stream_reset.v1 stop
}

// Replay a recorded session offline, as `acp-guard replay --json` does:
// the pipeline decides with the configuration the recording ran under.
func ExampleReplay() {
	transcript := strings.Join([]string{
		`{"t_ms":0,"dir":"meta","argv":["codex-acp"],"adapter":"codex-acp"}`,
		`{"t_ms":5,"dir":"c2a","msg":{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}}`,
		`{"t_ms":900,"dir":"a2c","msg":{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error","data":{"message":"stream disconnected before completion","codex_error_info":"other"}}}}`,
	}, "\n")
	events, _ := replay.ReadAll(strings.NewReader(transcript))
	res, err := acpguard.Replay(events, acpguard.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range res.Turns {
		fmt.Println(t.Outcome, t.ProviderError.Code, t.ProviderError.Class, t.Decision.Action)
	}
	// Output:
	// annotated agent_transport_lost transient stop
}
