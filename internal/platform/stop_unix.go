//go:build unix

package platform

const stopClosesStdin = false

const stopExitCode = 128 + int(SIGTERM)
