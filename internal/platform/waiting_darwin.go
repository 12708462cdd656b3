//go:build darwin

package platform

import "golang.org/x/sys/unix"

// fionread is FIONREAD in <sys/filio.h>: _IOR('f', 127, int).
const fionread = 0x4004667f

func waiting(fd uintptr) int64 {
	v, err := unix.IoctlGetInt(int(fd), fionread)
	if err != nil {
		return -1
	}
	return int64(v)
}
