//go:build windows

package platform

const stopClosesStdin = true
