//go:build unix

package platform

import (
	"os"

	"github.com/creack/pty"
)

// OpenPTY opens a pseudo-terminal: the master for acp-guard, the other
// end for the agent's stderr.
func OpenPTY() (master, tty *os.File, err error) { return pty.Open() }
