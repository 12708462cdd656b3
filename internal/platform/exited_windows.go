//go:build windows

package platform

// Exited reports whether pid has exited.
func Exited(pid int) bool { return !Alive(pid) }
