// Command testsummary turns `go test -json` on its stdin into the short
// report make interop prints: one line per finished scenario (leaf
// subtest), every KNOWN AGENT BUG line, the whole output of each failed
// test, and a total. It keeps the raw JSON in -log when given.
//
//	go test -json -tags interop ./dev/interop/suite/ | go run ./dev/interop/cmd/testsummary -log /tmp/interop.json
//
// It exits 1 unless every package it saw passed: a failed test, a build
// failure, a panic or a timeout of go test, and input that ends before a
// package's result, all fail it (a pipe hides go test's own exit code).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	logPath := flag.String("log", "", "also write the raw input here")
	flag.Parse()
	var in io.Reader = os.Stdin
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}
	if !summarize(in, os.Stdout, time.Now()) {
		os.Exit(1)
	}
}

// summary is the state of one run.
type summary struct {
	w        io.Writer
	output   map[string][]string // test → its output lines so far
	parents  map[string]bool     // tests that have subtests
	packages map[string]string   // package → its final action ("" : none yet)
	pass     int
	fail     []string
	skip     int
}

// summarize reads the events and reports whether everything passed.
func summarize(r io.Reader, w io.Writer, began time.Time) bool {
	s := &summary{w: w, output: map[string][]string{}, parents: map[string]bool{}, packages: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text()) // build errors and other text: shown as they are
			continue
		}
		s.event(e)
	}
	ok := len(s.fail) == 0 && len(s.packages) > 0
	pkgs := make([]string, 0, len(s.packages))
	for p, result := range s.packages {
		pkgs = append(pkgs, p)
		if result != "pass" {
			ok = false
		}
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		if s.packages[p] != "pass" {
			fmt.Fprintf(w, "interop: package %s: %s\n", p, orNone(s.packages[p]))
		}
	}
	fmt.Fprintf(w, "interop: %d passed, %d failed, %d skipped in %v\n", s.pass, len(s.fail), s.skip, time.Since(began).Round(time.Second))
	for _, f := range s.fail {
		fmt.Fprintf(w, "interop: FAILED %s\n", f)
	}
	return ok
}

func orNone(result string) string {
	if result == "" {
		return "no result (go test was killed or its output cut)"
	}
	return result
}

func (s *summary) event(e event) {
	if e.Test == "" {
		switch e.Action {
		case "pass", "fail", "skip":
			s.packages[e.Package] = e.Action
		case "start":
			s.packages[e.Package] = ""
		case "output":
			if strings.HasPrefix(e.Output, "panic:") || strings.Contains(e.Output, "test timed out") || strings.HasPrefix(e.Output, "FAIL") {
				fmt.Fprint(s.w, e.Output)
			}
		}
		return
	}
	if i := strings.LastIndexByte(e.Test, '/'); i > 0 {
		s.parents[e.Test[:i]] = true
	}
	switch e.Action {
	case "output":
		s.output[e.Test] = append(s.output[e.Test], e.Output)
		if strings.Contains(e.Output, "KNOWN AGENT BUG") {
			fmt.Fprintf(s.w, "interop: %s: %s\n", e.Test, strings.TrimSpace(e.Output))
		}
	case "pass", "skip":
		if !s.parents[e.Test] {
			if e.Action == "pass" {
				s.pass++
			} else {
				s.skip++
			}
			fmt.Fprintf(s.w, "interop: %s %s (%.1f s)\n", strings.ToUpper(e.Action), e.Test, e.Elapsed)
		}
		delete(s.output, e.Test)
	case "fail":
		if !s.parents[e.Test] || !s.childFailed(e.Test) {
			s.fail = append(s.fail, e.Test)
			fmt.Fprintf(s.w, "interop: FAIL %s (%.1f s):\n", e.Test, e.Elapsed)
			for _, line := range s.output[e.Test] {
				if !strings.HasPrefix(line, "=== ") {
					fmt.Fprint(s.w, "    "+line)
				}
			}
		}
		delete(s.output, e.Test)
	}
}

// childFailed reports whether a subtest of test has been reported failed.
func (s *summary) childFailed(test string) bool {
	for _, f := range s.fail {
		if strings.HasPrefix(f, test+"/") {
			return true
		}
	}
	return false
}
