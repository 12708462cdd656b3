package acpguard

import (
	"fmt"
	"os"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/seam"
	"github.com/acp-guard/acp-guard/policy"
)

// Policy is a recovery policy document, parsed and checked
// (docs/POLICY.md specifies it): what to retry, what to wait for, which
// models to fall back to (Config.Policy).
type Policy struct {
	doc policy.Document
}

// ParsePolicy parses and checks a policy document; the error names the
// member at fault.
func ParsePolicy(data []byte) (*Policy, error) {
	doc, err := policy.Parse(data)
	if err != nil {
		return nil, err
	}
	return &Policy{doc: doc}, nil
}

// LoadPolicy reads and parses the policy document in the named file.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("%s:\n%w", path, err)
	}
	return p, nil
}

// Catalogue is a failure catalogue ready to classify with: the embedded
// one or a catalogue file (docs/CATALOGUE.md), compiled and checked
// (Config.Catalogue).
type Catalogue struct {
	engine *classify.Engine
}

// DefaultCatalogue returns the catalogue embedded in this build.
func DefaultCatalogue() *Catalogue { return &Catalogue{engine: catalogue.Default()} }

// LoadCatalogue reads, compiles and checks the catalogue in the named
// file; the error names the rule at fault.
func LoadCatalogue(path string) (*Catalogue, error) {
	e, err := catalogue.Load(path)
	if err != nil {
		return nil, err
	}
	return &Catalogue{engine: e}, nil
}

// Version is the catalogue's version, as a ProviderError's
// catalogueVersion and a transcript's meta event carry it.
func (c *Catalogue) Version() string { return c.engine.Version() }

func init() {
	seam.NewCatalogue = func(e *classify.Engine) any { return &Catalogue{engine: e} }
	seam.Engine = func(c any) *classify.Engine {
		if c, _ := c.(*Catalogue); c != nil {
			return c.engine
		}
		return nil
	}
}
