//go:build windows

package platform

const stopClosesStdin = true

const stopExitCode = 128 + int(SIGINT)
