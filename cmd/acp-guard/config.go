package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// Configuration without flags. Every proxy flag F (and `attempts
// --state-dir`) may also be given
//
//   - in the environment as ACP_GUARD_<F> (upper case, '-' → '_'):
//     ACP_GUARD_POLICY, ACP_GUARD_STATE_DIR, ACP_GUARD_LOG_FILE,
//     ACP_GUARD_LOG_LEVEL, ACP_GUARD_RECORD, …;
//   - in the config file $XDG_CONFIG_HOME/acp-guard/config.json (default
//     ~/.config/acp-guard/config.json on Linux, os.UserConfigDir elsewhere),
//     a JSON object keyed by flag name:
//     {"policy": "~/.config/acp-guard/policy.json", "log-level": "info",
//     "fallback-models": ["model-b"]}. ACP_GUARD_CONFIG names another file.
//
// Precedence: flag > environment > config file > default. Path values
// (policy, state-dir, log-file, record, catalogue) from any source have a
// leading ~ and $VAR / ${VAR} expanded, since editors pass arguments
// without a shell. `acp-guard config` prints the effective values and where
// each came from.

const envPrefix = "ACP_GUARD_"

// pathFlags hold file or directory paths, expanded after resolution.
var pathFlags = map[string]bool{"policy": true, "state-dir": true, "log-file": true, "record": true, "catalogue": true}

// notConfigurable are flags only the command line sets.
var notConfigurable = map[string]bool{"help": true, "version": true}

// setting is one configurable flag's effective value and its source.
type setting struct {
	Name, Value, From string
}

// envName is the environment variable for flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// configFilePath is the config file acp-guard reads, and whether it was
// named explicitly (then it must exist). A variable in ACP_GUARD_CONFIG
// that is not set leaves its text as it is (the file is then not found,
// and the error names it).
func configFilePath() (string, bool) {
	if p := os.Getenv(envPrefix + "CONFIG"); p != "" {
		if x, err := expandPath(p); err == nil {
			p = x
		}
		return p, true
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "acp-guard", "config.json"), false
	}
	home, err := platform.ConfigHome() // ~/.config on Linux, os.UserConfigDir elsewhere
	if err != nil {
		return "", false
	}
	return filepath.Join(home, "acp-guard", "config.json"), false
}

// maxConfigBytes bounds the config file.
const maxConfigBytes = 1 << 20

// loadConfigFile reads the config file into flag-name → flag-value text.
// A missing default file is no configuration.
func loadConfigFile(path string, explicit bool) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("config file %s: larger than %d bytes", path, maxConfigBytes)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("config file %s: not a JSON object: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		s, err := configValue(v)
		if err != nil {
			return nil, fmt.Errorf("config file %s: %q: %w", path, k, err)
		}
		out[k] = s
	}
	return out, nil
}

// configValue turns a JSON string, number, boolean or array of strings
// into the text a flag parses.
func configValue(v json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, nil
	}
	var list []string
	if json.Unmarshal(v, &list) == nil {
		return strings.Join(list, ","), nil
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return strconv.FormatBool(b), nil
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String(), nil
	}
	return "", errors.New("want a string, number, boolean or list of strings")
}

// applyConfig fills the flags of fs that the command line did not set
// from the environment, then the config file, and expands path values.
// only, if not nil, limits which flags are configurable (and which config
// file keys are used). It returns every configurable flag's effective
// value and source.
func applyConfig(fs *pflag.FlagSet, only map[string]bool) ([]setting, error) {
	path, explicit := configFilePath()
	file, err := loadConfigFile(path, explicit)
	if err != nil {
		return nil, err
	}
	if only == nil {
		if err := unknownKeys(fs, file, path); err != nil {
			return nil, err
		}
	}
	var out []setting
	var ferr error
	fs.VisitAll(func(f *pflag.Flag) {
		if ferr != nil || notConfigurable[f.Name] || (only != nil && !only[f.Name]) {
			return
		}
		st, err := resolve(fs, f, file, path)
		if err != nil {
			ferr = err
			return
		}
		out = append(out, st)
	})
	return out, ferr
}

// resolve applies one flag's environment or config-file value.
func resolve(fs *pflag.FlagSet, f *pflag.Flag, file map[string]string, path string) (setting, error) {
	st := setting{Name: f.Name, From: "default"}
	var val, from string
	set := false
	switch v, ok := os.LookupEnv(envName(f.Name)); {
	case f.Changed && f.Value.Type() == "string" && f.Value.String() == "--":
		// "--policy -- agent": the flag took the "--" as its value.
		return st, fmt.Errorf("flag needs an argument: --%s (it took the \"--\" that was to start the agent command)", f.Name)
	case f.Changed:
		st.From = "flag --" + f.Name
	case ok:
		val, from, set = v, "env "+envName(f.Name), true
	default:
		if v, ok := file[f.Name]; ok {
			val, from, set = v, "config file "+path, true
		}
	}
	if set {
		if err := fs.Set(f.Name, val); err != nil {
			return st, fmt.Errorf("%s: %q for --%s: %w", from, val, f.Name, err)
		}
		st.From = from
	}
	if pathFlags[f.Name] {
		v := f.Value.String()
		x, err := expandPath(v)
		if err != nil {
			return st, fmt.Errorf("--%s %q (%s): %w", f.Name, v, st.From, err)
		}
		if x != v {
			if err := fs.Set(f.Name, x); err != nil {
				return st, err
			}
		}
	}
	st.Value = f.Value.String()
	return st, nil
}

// unknownKeys refuses config-file keys that are no flag of fs.
func unknownKeys(fs *pflag.FlagSet, file map[string]string, path string) error {
	var bad []string
	for k := range file {
		if fs.Lookup(k) == nil || notConfigurable[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("config file %s: unknown setting %q (keys are the proxy's flag names, e.g. \"policy\", \"log-level\")", path, strings.Join(bad, `", "`))
}

// expandPath expands a leading ~ (the user's home) and $VAR / ${VAR}. A
// variable that is not set is an error naming it: an empty expansion
// would silently put the file elsewhere (a variable set to "" is used). A
// $ that does not start a variable name ($$, $1, a trailing $) stays as it
// is: it is part of the path.
func expandPath(p string) (string, error) {
	var missing []string
	p = expandVars(p, func(name string) string {
		v, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, "$"+name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s not set", strings.Join(missing, ", "))
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("~: %w", err)
		}
		return filepath.Join(home, p[1:]), nil
	}
	return p, nil
}

// expandVars replaces $NAME and ${NAME} (NAME a shell identifier) with
// lookup(NAME) and leaves every other $ alone.
func expandVars(s string, lookup func(string) string) string {
	ident := func(c byte, first bool) bool {
		return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || !first && c >= '0' && c <= '9'
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '{' {
			if end := strings.IndexByte(s[i+2:], '}'); end > 0 {
				name := s[i+2 : i+2+end]
				ok := true
				for k := 0; k < len(name); k++ {
					ok = ok && ident(name[k], k == 0)
				}
				if ok {
					b.WriteString(lookup(name))
					i += 2 + end
					continue
				}
			}
			b.WriteByte('$')
			continue
		}
		j := i + 1
		for j < len(s) && ident(s[j], j == i+1) {
			j++
		}
		if j == i+1 {
			b.WriteByte('$')
			continue
		}
		b.WriteString(lookup(s[i+1 : j]))
		i = j - 1
	}
	return b.String()
}
