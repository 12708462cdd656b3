//go:build linux

package platform

import "golang.org/x/sys/unix"

func waiting(fd uintptr) int64 {
	v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	if err != nil {
		return -1
	}
	return int64(v)
}
