package kvstore

import (
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	for spec, want := range map[string]Kind{
		"": KindFile, " file ": KindFile, "off": KindOff, "memory\n": KindMemory,
		"nats://127.0.0.1:4222": KindNATS, "tls://a:4222,tls://b:4222": KindNATS,
	} {
		kind, trimmed, err := ParseSpec(spec)
		if kind != want || trimmed != strings.TrimSpace(spec) || err != nil {
			t.Errorf("ParseSpec(%q) = %q, %q, %v; want %q", spec, kind, trimmed, err, want)
		}
	}
	for _, spec := range []string{"redis://user:hunter2@host", "File", "nats:/x", "offline"} {
		kind, _, err := ParseSpec(spec)
		if kind != "" || err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseSpec(%q) = %q, %v; want an error without the password", spec, kind, err)
		}
	}
}
