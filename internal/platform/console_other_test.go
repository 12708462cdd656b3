//go:build !windows

package platform

func noConsoleEvents() string { return "" }
