package telemetry

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestPostConnHungCollector: a collector that accepts and never answers
// costs each export its timeout and nothing else — the export's
// cancellation, which runs on a goroutine of its own once the deadline
// passes, touches the connection it was armed for, never the one a
// failed exchange has just closed and cleared (it dereferenced a nil
// connection now and then on a busy machine; run with -race it is
// reported on every few exports).
func TestPostConnHungCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { <-done; c.Close() }() // read nothing, answer nothing
		}
	}()
	target, _ := url.Parse("http://" + ln.Addr().String() + "/v1/traces")
	pc := &postConn{target: target, timeout: 5 * time.Millisecond}
	for i := 0; i < 50; i++ {
		if _, err := pc.do(context.Background(), http.Header{}, []byte("x")); err == nil {
			t.Fatalf("export %d: a collector that never answers answered", i)
		}
	}
}
