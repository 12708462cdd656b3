package catalogue

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"sync"

	"github.com/acp-guard/acp-guard/classify"
)

//go:embed catalogue.json rules/*.json fixtures/*.json
var files embed.FS

// Embedded returns the built-in catalogue data: the version of
// catalogue.json, the rules of rules/*.json and the fixtures of
// fixtures/*.json (files in name order, so a rules file's place in the
// order is its name's).
func Embedded() (classify.Catalogue, error) {
	b, err := files.ReadFile("catalogue.json")
	if err != nil {
		return classify.Catalogue{}, err
	}
	c, err := Parse(b)
	if err != nil {
		return c, fmt.Errorf("catalogue.json: %w", err)
	}
	if err := eachFile("rules", func(n string, b []byte) error {
		var rs []classify.Rule
		if err := strictUnmarshal(b, &rs); err != nil {
			return err
		}
		c.Rules = append(c.Rules, rs...)
		return nil
	}); err != nil {
		return c, err
	}
	err = eachFile("fixtures", func(n string, b []byte) error {
		var fs []classify.Fixture
		if err := strictUnmarshal(b, &fs); err != nil {
			return err
		}
		c.Fixtures = append(c.Fixtures, fs...)
		return nil
	})
	return c, err
}

// eachFile calls fn with every embedded file of dir, in name order.
func eachFile(dir string, fn func(name string, b []byte) error) error {
	entries, err := files.ReadDir(dir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := files.ReadFile(path.Join(dir, n))
		if err == nil {
			err = fn(n, b)
		}
		if err != nil {
			return fmt.Errorf("%s/%s: %w", dir, n, err)
		}
	}
	return nil
}

var (
	defaultOnce   sync.Once
	defaultEngine *classify.Engine
)

// Default returns the engine of the embedded catalogue. It panics only if
// the embedded data is invalid, which this package's tests rule out (they
// also run every fixture, so start-up only compiles the rules).
func Default() *classify.Engine {
	defaultOnce.Do(func() {
		c, err := Embedded()
		if err == nil {
			defaultEngine, err = classify.Compile(c)
		}
		if err != nil {
			panic("catalogue: embedded catalogue is invalid: " + err.Error())
		}
	})
	return defaultEngine
}

// Load reads an operator-reviewed catalogue file (one JSON document with
// version, rules and fixtures; the format is described in doc.go). The
// catalogue must compile and pass its own fixtures.
func Load(file string) (*classify.Engine, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("catalogue %s: %w", file, err)
	}
	e, err := Check(c)
	if err != nil {
		return nil, fmt.Errorf("catalogue %s: %w", file, err)
	}
	return e, nil
}

// Parse decodes a catalogue document, rejecting unknown fields.
func Parse(b []byte) (classify.Catalogue, error) {
	var c classify.Catalogue
	if err := strictUnmarshal(b, &c); err != nil {
		return c, err
	}
	return c, nil
}

// Check compiles c and runs its fixtures; the error names the first
// failing fixture.
func Check(c classify.Catalogue) (*classify.Engine, error) {
	e, err := classify.Compile(c)
	if err != nil {
		return nil, err
	}
	rep := e.Test()
	if !rep.OK() {
		for _, r := range rep.Rules {
			if len(r.Failures) > 0 {
				return nil, fmt.Errorf("%d of %d fixtures fail; first: rule %s: fixture %s", rep.Failed, rep.Fixtures, r.Rule, r.Failures[0])
			}
		}
	}
	return e, nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON document")
	}
	return nil
}
