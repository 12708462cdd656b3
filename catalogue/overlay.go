package catalogue

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/acp-guard/acp-guard/classify"
)

// MaxOverlayBytes bounds an overlay document (a file, a store value).
const MaxOverlayBytes = 512 << 10

// Overlay is a validated catalogue overlay: the engine of the embedded
// catalogue with the overlay's rules added or put in place of the
// embedded rules of the same id, and what it was made from.
type Overlay struct {
	Engine  *classify.Engine // Version() is "<embedded>+<overlay>"
	Version string           // the overlay document's own version
	Doc     []byte           // the document as read (compact JSON when it came from a store)
	Hash    string           // hex SHA-256 of Doc
	Added   []string         // ids of the rules it added
	Changed []string         // ids of the embedded rules it overrides
}

// ErrOverlay marks every reason an overlay is refused.
var ErrOverlay = errors.New("catalogue overlay refused")

// ParseOverlay decodes, merges and validates an overlay document (the
// catalogue file format of doc.go; its rules and fixtures only) against
// the embedded catalogue; see Merge for the checks. The error wraps
// ErrOverlay and names the first problem.
func ParseOverlay(doc []byte) (*Overlay, error) {
	base, err := embeddedAll()
	if err != nil {
		return nil, err
	}
	return MergeOverlay(base, doc)
}

var (
	embeddedOnce sync.Once
	embeddedCat  classify.Catalogue
	embeddedErr  error
)

// embeddedAll is Embedded, read once per process.
func embeddedAll() (classify.Catalogue, error) {
	embeddedOnce.Do(func() { embeddedCat, embeddedErr = Embedded() })
	return embeddedCat, embeddedErr
}

// Merged is an overlay document decoded and merged over a base
// catalogue, before the merged catalogue is validated.
type Merged struct {
	Catalogue classify.Catalogue // base's rules with the overlay's; its fixtures and base's of the rules it does not override
	Overlay   classify.Catalogue // the document as decoded
	Replaced  []classify.Rule    // base's rules the overlay overrides
	Added     []string           // ids of the rules it adds
}

// Merge decodes the overlay document doc and merges it over base (a
// catalogue with its fixtures). It refuses (ErrOverlay) a document that
// is not one JSON document of the catalogue format, is larger than
// MaxOverlayBytes, has no version (or one with '+', spaces or control
// characters), no rules, two rules of one id, a rule without a positive
// and a negative fixture of its own, or a fixture of a rule it does not
// carry.
//
// Merging: a rule whose id is in base replaces it in place (with its
// fixtures: base's fixtures of that rule are dropped); a new rule comes
// before every rule of base, so that in the ordered tiers (3, 4) it is
// tried first. The merged version is base's, "+", the overlay's.
func Merge(base classify.Catalogue, doc []byte) (*Merged, error) {
	if len(doc) > MaxOverlayBytes {
		return nil, refuse("%d bytes, more than %d", len(doc), MaxOverlayBytes)
	}
	ov, err := Parse(doc)
	if err != nil {
		return nil, refuse("%v", err)
	}
	if ov.Version == "" || strings.ContainsAny(ov.Version, "+") || strings.IndexFunc(ov.Version, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}) >= 0 || len(ov.Version) > 64 {
		return nil, refuse("version %q: want a non-empty name of at most 64 characters without '+', spaces or control characters", ov.Version)
	}
	if len(ov.Rules) == 0 {
		return nil, refuse("version %s has no rules", ov.Version)
	}
	mine := map[string]classify.Rule{}
	for _, r := range ov.Rules {
		if _, dup := mine[r.ID]; dup {
			return nil, refuse("rule %s appears twice", r.ID)
		}
		mine[r.ID] = r
	}
	pos, neg := map[string]int{}, map[string]int{}
	for i, f := range ov.Fixtures {
		if _, ok := mine[f.Rule]; !ok {
			return nil, refuse("fixture %d (%s) is of rule %q, which the overlay does not carry", i, f.Name, f.Rule)
		}
		if f.Match {
			pos[f.Rule]++
		} else {
			neg[f.Rule]++
		}
	}
	for _, r := range ov.Rules {
		if pos[r.ID] == 0 || neg[r.ID] == 0 {
			return nil, refuse("rule %s needs a positive and a negative fixture (has %d and %d)", r.ID, pos[r.ID], neg[r.ID])
		}
	}
	m := &Merged{Overlay: ov}
	m.Catalogue.Version = base.Version + "+" + ov.Version
	var rest []classify.Rule
	for _, r := range base.Rules {
		if nr, ok := mine[r.ID]; ok {
			rest = append(rest, nr)
			m.Replaced = append(m.Replaced, r)
			continue
		}
		rest = append(rest, r)
	}
	replaced := map[string]bool{}
	for _, r := range m.Replaced {
		replaced[r.ID] = true
	}
	for _, r := range ov.Rules {
		if !replaced[r.ID] {
			m.Catalogue.Rules = append(m.Catalogue.Rules, r)
			m.Added = append(m.Added, r.ID)
		}
	}
	m.Catalogue.Rules = append(m.Catalogue.Rules, rest...)
	m.Catalogue.Fixtures = slices.Clone(ov.Fixtures)
	for _, f := range base.Fixtures {
		if _, ok := mine[f.Rule]; !ok {
			m.Catalogue.Fixtures = append(m.Catalogue.Fixtures, f)
		}
	}
	return m, nil
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrOverlay, fmt.Sprintf(format, args...))
}

// MergeOverlay is Merge followed by the validation a running proxy does
// before it uses an overlay: every rule of the overlay checks on its own
// (classify.CheckRule), the merged catalogue compiles, the overlay's
// fixtures pass, and so does every fixture of base it does not override
// that one of the overlay's rules, or of the rules it replaces, matches —
// the others have the same matching rules, hence the same verdict, as in
// base, whose own tests passed (classify.Engine.MatchesFixture). The full
// check — lint and every fixture — is `acp-guard catalogue test OVERLAY`'s.
func MergeOverlay(base classify.Catalogue, doc []byte) (*Overlay, error) {
	m, err := Merge(base, doc)
	if err != nil {
		return nil, err
	}
	ver := m.Overlay.Version
	for _, r := range m.Overlay.Rules {
		if errs := classify.CheckRule(r); len(errs) > 0 {
			return nil, refuse("version %s does not compile: %s", ver, strings.Join(errs, "; "))
		}
	}
	e, err := classify.CompileRules(m.Catalogue)
	if err != nil {
		return nil, refuse("version %s does not compile: %v", ver, err)
	}
	var probes []*classify.Engine // the overlay's rules; the rules they replace (same ids)
	for _, rs := range [][]classify.Rule{m.Overlay.Rules, m.Replaced} {
		if len(rs) == 0 {
			continue
		}
		p, err := classify.CompileRules(classify.Catalogue{Version: ver, Rules: rs})
		if err != nil {
			return nil, refuse("version %s does not compile: %v", ver, err)
		}
		probes = append(probes, p)
	}
	mine := map[string]bool{}
	for _, r := range m.Overlay.Rules {
		mine[r.ID] = true
	}
	run := classify.Catalogue{Version: m.Catalogue.Version, Rules: m.Catalogue.Rules, Fixtures: slices.Clone(m.Overlay.Fixtures)}
	for _, f := range m.Catalogue.Fixtures[len(m.Overlay.Fixtures):] {
		for _, p := range probes {
			if hit, err := p.MatchesFixture(f); err != nil || hit {
				run.Fixtures = append(run.Fixtures, f)
				break
			}
		}
	}
	te, err := classify.CompileRules(run)
	if err != nil {
		return nil, refuse("version %s does not compile: %v", ver, err)
	}
	if rep := te.Test(); !rep.OK() {
		for _, r := range rep.Rules {
			if len(r.Failures) == 0 {
				continue
			}
			whose := "an embedded fixture"
			if mine[r.Rule] {
				whose = "its own fixture"
			}
			return nil, refuse("version %s: %d fixture(s) fail with it; first: %s of rule %s: %s", ver, rep.Failed, whose, r.Rule, r.Failures[0])
		}
	}
	sum := sha256.Sum256(doc)
	return &Overlay{Engine: e, Version: ver, Doc: doc, Hash: hex.EncodeToString(sum[:]), Added: m.Added,
		Changed: ids(m.Replaced)}, nil
}

func ids(rs []classify.Rule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}
