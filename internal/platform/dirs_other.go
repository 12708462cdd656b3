//go:build !linux

package platform

import "os"

func stateHome() (string, error) { return os.UserCacheDir() }

func configHome() (string, error) { return os.UserConfigDir() }
