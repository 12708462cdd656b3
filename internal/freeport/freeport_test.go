package freeport

import (
	"fmt"
	"net"
	"testing"
)

// A picked port is in the range and can be listened on.
func TestPickIsInRangeAndFree(t *testing.T) {
	for range 20 {
		p, err := Pick()
		if err != nil {
			t.Fatal(err)
		}
		if p < Low || p >= High {
			t.Fatalf("Pick() = %d, want in [%d, %d)", p, Low, High)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken meanwhile by someone else: allowed
		}
		l.Close()
	}
}
