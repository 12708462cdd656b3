// Command bytecopy is the baseline relay of the end-to-end benchmark: it
// starts AGENT with pipes on its stdin and stdout and runs two io.Copy calls,
// stdin → agent and agent stdout → stdout, nothing else. Agent stderr is
// inherited. It exits with the agent's exit code (128+N when killed by
// signal N).
//
//	bytecopy [--] AGENT [ARGS...]
//
// Between pipes io.Copy reads and writes through a 32 KiB buffer (Go uses
// splice(2) only when one side is a socket), so this is the cost of moving
// the bytes through a process and nothing more.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/acp-guard/acp-guard/internal/platform"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	argv := args
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: bytecopy [--] AGENT [ARGS...]")
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	toAgent, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bytecopy:", err)
		return 1
	}
	fromAgent, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bytecopy:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "bytecopy:", err)
		return 127
	}
	// The stdin copier ends at client EOF and then closes the agent's
	// stdin; nothing waits for it, since a client that never closes stdin
	// must not keep us alive once the agent is gone.
	go func() {
		_, _ = io.Copy(toAgent, os.Stdin)
		toAgent.Close()
	}()
	// The stdout copy ends when the agent's stdout reaches EOF; it must
	// finish before Wait, which closes the pipe.
	_, _ = io.Copy(os.Stdout, fromAgent)
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if sig, ok := platform.ExitSignal(ee.ProcessState); ok {
			return 128 + int(sig)
		}
		return ee.ExitCode()
	}
	fmt.Fprintln(os.Stderr, "bytecopy:", err)
	return 1
}
