package main

import (
	"strings"
	"testing"
)

func TestExpandVars(t *testing.T) {
	env := map[string]string{"HOME": "/h", "X_1": "x", "EMPTY": ""}
	var missing []string
	lookup := func(name string) string {
		v, ok := env[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	}
	for in, want := range map[string]string{
		"$HOME/a":            "/h/a",
		"${HOME}/a":          "/h/a",
		"/t/$X_1-y":          "/t/x-y",
		"/t/kill_-KILL_$$/1": "/t/kill_-KILL_$$/1",
		"/t/$1/a":            "/t/$1/a",
		"/t/a$":              "/t/a$",
		"/t/${}/a":           "/t/${}/a",
		"/t/${1x}/a":         "/t/${1x}/a",
		"/t/$EMPTY/a":        "/t//a",
		"/t/$UNSET/a":        "/t//a",
	} {
		if got := expandVars(in, lookup); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
	if strings.Join(missing, ",") != "UNSET" {
		t.Errorf("looked up as missing: %v, want UNSET only", missing)
	}
}
