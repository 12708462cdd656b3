//go:build windows

package platform

import "errors"

// MapAnon: not on Windows (VirtualAlloc would charge the whole size to
// the commit limit up front); the caller reads the line onto the heap.
func MapAnon(n int) ([]byte, error) { return nil, errors.ErrUnsupported }

// Unmap: nothing is ever mapped on Windows.
func Unmap(b []byte) error { return errors.ErrUnsupported }
