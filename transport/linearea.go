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

// movePiece is how much of a line toHeap copies before it hands the
// copied pages back.
const movePiece = 1 << 20

// toHeap moves line, which starts at the beginning of the area, onto the
// Go heap piece by piece, handing each copied piece's pages back to the
// kernel at once: the line is never held twice (the peak is the line plus
// one piece). The area must not be read afterwards — its pages read as
// zeros — and is still unmapped by free.
func (a *lineArea) toHeap(line []byte) []byte {
	base := a.buf[:cap(a.buf)]
	if len(line) == 0 || &line[0] != &base[0] {
		return append([]byte(nil), line...) // not where toHeap expects it
	}
	out := make([]byte, len(line))
	for off := 0; off < len(line); off += movePiece {
		end := min(off+movePiece, len(line))
		copy(out[off:end], line[off:end])
		// off is page-aligned (the mapping is, and movePiece is a
		// multiple of the page size); the kernel rounds the length up.
		_ = syscall.Madvise(base[off:end], syscall.MADV_DONTNEED)
	}
	return out
}
