package transport

import "syscall"

// lineArea is memory for one long line, mapped apart from the Go heap:
// the kernel backs only the pages a line actually fills, the line is read
// into it in place, and free hands the pages back at once — the garbage
// collector never sees a line-sized buffer, so a line near the cap is held
// once, not in the several copies a growing slice and a lagging collector
// leave behind.
type lineArea struct {
	buf []byte // len 0, cap max
}

// newLineArea maps max bytes of address space, or returns nil when it
// cannot (the caller reads the line onto the heap instead).
func newLineArea(max int64) *lineArea {
	if max <= 0 || max > 1<<40 {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return &lineArea{buf: b[:0]}
}

// free unmaps the area. Nothing may use a line read into it afterwards
// (the batch holding the line calls it on release).
func (a *lineArea) free() {
	if a.buf != nil {
		_ = syscall.Munmap(a.buf[:cap(a.buf)])
		a.buf = nil
	}
}
