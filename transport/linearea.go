package transport

import (
	"runtime"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// lineArea is memory for one long line, mapped apart from the Go heap:
// the kernel backs only the pages a line actually fills, the line is read
// into it in place, and free hands the pages back at once — the garbage
// collector never sees a line-sized buffer, so a line near the cap is held
// once, not in the several copies a growing slice and a lagging collector
// leave behind.
type lineArea struct {
	buf  []byte // len 0, cap max
	kept bool   // the garbage collector unmaps it (keep), free does not
}

// newLineArea maps max bytes of address space, or returns nil when it
// cannot or the OS has no such mapping (Windows): the caller reads the
// line onto the heap instead.
func newLineArea(max int64) *lineArea {
	if max <= 0 || max > 1<<40 {
		return nil
	}
	b, err := platform.MapAnon(int(max))
	if err != nil {
		return nil
	}
	return &lineArea{buf: b[:0]}
}

// free unmaps the area, unless it is kept (keep). Nothing may use a line
// read into it afterwards (the batch holding the line calls it on
// release).
func (a *lineArea) free() {
	if a.buf != nil && !a.kept {
		_ = platform.Unmap(a.buf[:cap(a.buf)])
		a.buf = nil
	}
}

// keep hands the area to the garbage collector, for a line the relay
// keeps past its batch (a session/prompt's params, sent again on a retry):
// free no longer unmaps it; it is unmapped once nothing references the
// area — the batch until the line is written, the Request that keeps the
// params (Request.keep) until the turn is over. The line is held once, in
// place: moving it onto the heap instead could hold it twice at once,
// because the runtime zeroes a reused heap span in full before anything is
// copied into it. Whoever keeps a slice of the area must keep the area.
func (a *lineArea) keep() {
	if a.kept || a.buf == nil {
		return
	}
	a.kept = true
	runtime.AddCleanup(a, func(b []byte) { _ = platform.Unmap(b) }, a.buf[:cap(a.buf)])
}
