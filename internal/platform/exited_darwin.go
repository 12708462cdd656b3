//go:build darwin

package platform

import "golang.org/x/sys/unix"

// Exited reports whether pid has exited (a zombie waiting to be reaped,
// or gone).
func Exited(pid int) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp.Proc.P_pid != int32(pid) {
		return true
	}
	const sZomb = 5 // SZOMB in <sys/proc.h>
	return kp.Proc.P_stat == sZomb
}
