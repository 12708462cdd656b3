//go:build windows

package platform

import "golang.org/x/sys/windows"

// noConsoleEvents says why a console control event cannot be tested here,
// or "": Wine 8 (ntdll has wine_get_version) refuses GenerateConsoleCtrlEvent
// for a process whose stdio are pipes ("Invalid access"). Real Windows
// runs the test (.github/workflows/ci.yml).
func noConsoleEvents() string {
	if windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil {
		return "under Wine, GenerateConsoleCtrlEvent fails for a process without a terminal"
	}
	return ""
}
