//go:build unix

package platform

import "golang.org/x/sys/unix"

// MapAnon maps n bytes of private anonymous memory, apart from the Go
// heap: the kernel backs only the pages that are touched. Unmap hands
// them back. Where there is no such mapping (Windows) it returns
// errors.ErrUnsupported and the caller uses the heap.
func MapAnon(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
}

// Unmap releases memory from MapAnon (the whole mapping: b[:cap(b)]).
func Unmap(b []byte) error { return unix.Munmap(b) }
