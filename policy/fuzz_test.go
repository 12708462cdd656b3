package policy

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics, that every accepted document is
// valid and survives normalization unchanged, and that every refusal names
// its problems.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		example,
		string(Default().Normalized()),
		`"retry_same"`, `"try_next"`, `"stop"`,
		`{"version":1,"legacy":"retry_same","fallback_models":["m"]}`,
		`{"version":1,"transient":{"retry":{"enabled":true,"max_retries":0}},"hard":{}}`,
		`{"version":1,"version":2,"request":{},"fallback_models":["a","a",""]}`,
		`{"version":1e400}`, `[]`, `null`, ``, `{`, `{"version":1}{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Parse(data)
		if err != nil {
			var verr *ValidationError
			if errors.As(err, &verr) {
				if len(verr.Errors) == 0 {
					t.Fatalf("ValidationError with no errors for %q", data)
				}
				for _, fe := range verr.Errors {
					if fe.Msg == "" {
						t.Fatalf("FieldError %q without a message for %q", fe.Field, data)
					}
				}
			}
			if !reflect.DeepEqual(doc, Document{}) {
				t.Fatalf("Parse(%q): got %+v with error %v, want the zero Document", data, doc, err)
			}
			return
		}
		if verr := doc.Validate(); verr != nil {
			t.Fatalf("Parse(%q) accepted an invalid document: %v", data, verr)
		}
		again, err := Parse(doc.Normalized())
		if err != nil {
			t.Fatalf("Parse(Normalized()) of %q: %v", data, err)
		}
		if !reflect.DeepEqual(again, doc) {
			t.Fatalf("normalization changed %q:\ngot  %+v\nwant %+v", data, again, doc)
		}
		_ = doc.Describe()
	})
}
