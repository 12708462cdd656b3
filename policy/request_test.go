package policy

import (
	"strings"
	"testing"
)

func TestParseRequestSection(t *testing.T) {
	const classes = `"transient":{"on_exhausted":"skip"},"hard":{"on_exhausted":"stop"}`
	d, err := Parse([]byte(`{"version":1,` + classes + `,"request":{"compact_then_retry":true}}`))
	if err != nil || !d.Request.CompactThenRetry {
		t.Fatalf("Parse: got %+v, %v; want compact_then_retry", d.Request, err)
	}
	if !strings.Contains(string(d.Normalized()), `"compact_then_retry": true`) {
		t.Errorf("Normalized drops the request section:\n%s", d.Normalized())
	}
	if got := d.Describe(); !strings.HasSuffix(got, "context overflow: the agent's compaction command, then one retry\n") {
		t.Errorf("Describe: got %q", got)
	}
	again, err := Parse(d.Normalized())
	if err != nil || again.Request != d.Request {
		t.Errorf("Parse(Normalized()): got %+v, %v", again.Request, err)
	}
	d, err = Parse([]byte(`{"version":1,` + classes + `}`))
	if err != nil || d.Request.CompactThenRetry {
		t.Errorf("default: got %+v, %v; want compaction off", d.Request, err)
	}
	d, err = Parse([]byte(`{"version":1,"legacy":"stop","request":{"compact_then_retry":true}}`))
	if err != nil || !d.Request.CompactThenRetry {
		t.Errorf("legacy with request: got %+v, %v", d.Request, err)
	}
}
