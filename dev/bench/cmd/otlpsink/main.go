// Command otlpsink runs a command with OpenTelemetry export pointed at a
// throw-away OTLP/HTTP receiver on 127.0.0.1, for measuring what telemetry
// costs the relay (make bench-otel):
//
//	otlpsink -- go run ./dev/bench/cmd/e2ebench -workloads roundtrip
//
// The receiver reads each request and answers 200 with an empty response
// (a valid empty Export*ServiceResponse); at the end it prints how many
// requests and bytes arrived per path to stderr. The command's exit code is
// passed through.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: otlpsink -- COMMAND [ARGS...]")
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		return 1
	}
	var mu sync.Mutex
	reqs, bytes := map[string]int{}, map[string]int64{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		reqs[r.URL.Path]++
		bytes[r.URL.Path] += n
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	// Serve returns when Close closes the listener, after the command.
	go func() { _ = srv.Serve(ln) }()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+ln.Addr().String())
	err = cmd.Run()
	_ = srv.Close()
	mu.Lock()
	paths := make([]string, 0, len(reqs))
	for p := range reqs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(os.Stderr, "otlpsink: %s: %d requests, %d bytes\n", p, reqs[p], bytes[p])
	}
	mu.Unlock()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		return 1
	}
	return 0
}
