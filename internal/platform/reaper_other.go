//go:build !linux

package platform

import "errors"

// BecomeSubreaper: only Linux has a subreaper; here orphans stay in the
// agent's process group (macOS) or job (Windows) and die with it.
func BecomeSubreaper() error { return errors.ErrUnsupported }

// ReapOrphans does nothing where there is no subreaper.
func ReapOrphans(skip int, done <-chan struct{}, reaped func(pid int)) {}
