package policy

import (
	"testing"
	"time"
)

func BenchmarkParse(b *testing.B) {
	data := []byte(example)
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	doc := exampleDoc()
	reset := t0.Add(time.Minute)
	f := Failure{Class: "transient", Safe: true, Now: t0, ResetAt: &reset}
	r := Route{Retries: map[string]int{"transient": 1}, WaitUsed: map[string]bool{}}
	for b.Loop() {
		Evaluate(doc, f, r)
	}
}

// BenchmarkAppend includes the fsync per record.
func BenchmarkAppend(b *testing.B) {
	l, err := OpenLog(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := sampleRecord("s", 1)
	for b.Loop() {
		if err := l.Append(rec); err != nil {
			b.Fatal(err)
		}
	}
}
