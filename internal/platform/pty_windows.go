//go:build windows

package platform

import (
	"errors"
	"os"
)

// ErrNoPTY is OpenPTY's error on Windows.
var ErrNoPTY = errors.New("a pty for the agent's stderr is not supported on Windows (github.com/creack/pty has no Windows support); run without --stderr-pty")

// OpenPTY: Windows has no pty creack/pty can open.
func OpenPTY() (master, tty *os.File, err error) { return nil, nil, ErrNoPTY }
