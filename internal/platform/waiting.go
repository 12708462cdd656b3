package platform

import "io"

// Waiting is how many bytes wait to be read on in, when in is a file that
// can say (a pipe, a terminal, a socket; for a regular file what is left
// of it); -1 otherwise. Linux: TIOCINQ; macOS: FIONREAD; Windows:
// PeekNamedPipe for a pipe, size minus offset for a file.
func Waiting(in io.Reader) int64 {
	sc, ok := in.(Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	n := int64(-1)
	_ = rc.Control(func(fd uintptr) { n = waiting(fd) })
	return n
}
