//go:build windows

package platform

import (
	"io"
	"unsafe"

	"golang.org/x/sys/windows"
)

// procPeekNamedPipe is kernel32's PeekNamedPipe, which x/sys/windows
// does not wrap.
var procPeekNamedPipe = windows.NewLazySystemDLL("kernel32.dll").NewProc("PeekNamedPipe")

func waiting(fd uintptr) int64 {
	h := windows.Handle(fd)
	t, err := windows.GetFileType(h)
	if err != nil {
		return -1
	}
	switch t {
	case windows.FILE_TYPE_PIPE:
		var avail uint32
		if r, _, _ := procPeekNamedPipe.Call(uintptr(h), 0, 0, 0, uintptr(unsafe.Pointer(&avail)), 0); r == 0 {
			return -1
		}
		return int64(avail)
	case windows.FILE_TYPE_DISK:
		var fi windows.ByHandleFileInformation
		if err := windows.GetFileInformationByHandle(h, &fi); err != nil {
			return -1
		}
		pos, err := windows.Seek(h, 0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		size := int64(fi.FileSizeHigh)<<32 | int64(fi.FileSizeLow)
		return max(size-pos, 0)
	}
	return -1
}
