//go:build unix

package platform

const stopClosesStdin = false
