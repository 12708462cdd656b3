// Command fakeprovider serves a scripted fake OpenAI/Anthropic/Gemini API on
// 127.0.0.1 (see package dev/interop/fakeprovider for the script format).
//
//	fakeprovider [-addr 127.0.0.1:0] [-script FILE] [-url-file FILE]
//
// The script comes from -script, else from $FAKEPROVIDER_SCRIPT (inline JSON),
// else it is empty (every request succeeds). The base URL is printed as the
// first line of stdout (and written to -url-file). Request log lines go to
// stderr. SIGINT/SIGTERM stop the server; the final stats are printed to
// stdout as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/acp-guard/acp-guard/dev/interop/fakeprovider"
	"github.com/acp-guard/acp-guard/internal/platform"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, platform.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakeprovider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	scriptFile := fs.String("script", "", "JSON script file (default: $FAKEPROVIDER_SCRIPT)")
	urlFile := fs.String("url-file", "", "write the base URL to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	script, err := loadScript(*scriptFile, os.Getenv("FAKEPROVIDER_SCRIPT"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	srv, err := fakeprovider.StartAddr(*addr, script, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(srv.URL+"\n"), 0o644); err != nil {
			fmt.Fprintln(stderr, err)
			srv.Close()
			return 1
		}
	}
	fmt.Fprintln(stdout, srv.URL)
	<-ctx.Done()
	srv.Close()
	_ = json.NewEncoder(stdout).Encode(srv.Stats())
	return 0
}

func loadScript(file, env string) (fakeprovider.Script, error) {
	var data []byte
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("fakeprovider: %w", err)
		}
		data = b
	case env != "":
		data = []byte(env)
	default:
		return nil, nil
	}
	return fakeprovider.ParseScript(data)
}
