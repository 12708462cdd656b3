package platform

// StateHome is the folder under which programs keep their state when
// XDG_STATE_HOME is not set (the callers read XDG first): ~/.local/state
// on Linux, os.UserCacheDir elsewhere (~/Library/Caches on macOS,
// %LocalAppData% on Windows).
func StateHome() (string, error) { return stateHome() }

// ConfigHome is the folder under which programs keep their configuration
// when XDG_CONFIG_HOME is not set: ~/.config on Linux, os.UserConfigDir
// elsewhere (~/Library/Application Support on macOS, %AppData% on
// Windows).
func ConfigHome() (string, error) { return configHome() }
