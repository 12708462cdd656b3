package acpschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Side is who sent a frame.
type Side int

const (
	Agent  Side = iota // agent → client frames (what the client reads)
	Client             // client → agent frames (what the agent reads)
)

// DefaultPath is where scripts/acp-schema.sh installs the schema, relative
// to the module root.
const DefaultPath = ".cache/acp-schema/node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"

// ErrMissing is returned by Locate when no schema file was found.
var ErrMissing = errors.New("ACP schema not found: run scripts/acp-schema.sh (or set ACP_SCHEMA to schema/v1/schema.json of @agentclientprotocol/sdk)")

// Locate returns the schema path: $ACP_SCHEMA, else DefaultPath under the
// module root, if that file exists.
func Locate() (string, error) {
	if p := os.Getenv("ACP_SCHEMA"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("ACP_SCHEMA: %w", err)
		}
		return p, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", ErrMissing
	}
	p := filepath.Join(filepath.Dir(file), "..", "..", filepath.FromSlash(DefaultPath))
	if _, err := os.Stat(p); err != nil {
		return "", ErrMissing
	}
	return filepath.Clean(p), nil
}

// Params and results by method: the $defs entry each one must match.
var (
	clientRequests = map[string]string{
		"initialize":                "InitializeRequest",
		"authenticate":              "AuthenticateRequest",
		"session/new":               "NewSessionRequest",
		"session/load":              "LoadSessionRequest",
		"session/prompt":            "PromptRequest",
		"session/set_mode":          "SetSessionModeRequest",
		"session/set_config_option": "SetSessionConfigOptionRequest",
		"session/set_model":         "SetSessionModelRequest", // unstable; absent from newer schemas
		"session/cancel":            "CancelNotification",
		"_acp-guard/recovery":       "ExtRequest", // acp-guard's extension method (guard/operator.go)
	}
	agentResults = map[string]string{
		"initialize":                "InitializeResponse",
		"authenticate":              "AuthenticateResponse",
		"session/new":               "NewSessionResponse",
		"session/load":              "LoadSessionResponse",
		"session/prompt":            "PromptResponse",
		"session/set_mode":          "SetSessionModeResponse",
		"session/set_config_option": "SetSessionConfigOptionResponse",
		"session/set_model":         "SetSessionModelResponse",
		"_acp-guard/recovery":       "ExtResponse",
	}
	agentRequests = map[string]string{
		"session/update":             "SessionNotification",
		"session/request_permission": "RequestPermissionRequest",
		"fs/read_text_file":          "ReadTextFileRequest",
		"fs/write_text_file":         "WriteTextFileRequest",
		"terminal/create":            "CreateTerminalRequest",
		"terminal/output":            "TerminalOutputRequest",
		"terminal/release":           "ReleaseTerminalRequest",
		"terminal/wait_for_exit":     "WaitForTerminalExitRequest",
		"terminal/kill":              "KillTerminalCommandRequest",
	}
	clientResults = map[string]string{
		"session/request_permission": "RequestPermissionResponse",
		"fs/read_text_file":          "ReadTextFileResponse",
		"fs/write_text_file":         "WriteTextFileResponse",
		"terminal/create":            "CreateTerminalResponse",
	}
)

// Validator checks frames against one schema file.
type Validator struct {
	url  string
	mu   sync.Mutex // guards c and memo: Validate may be called concurrently
	c    *jsonschema.Compiler
	defs map[string]bool
	memo map[string]*jsonschema.Schema
	// extra holds definitions the main schema lacks (methods that were
	// unstable and later dropped, e.g. session/set_model), from another
	// schema file.
	extra *Validator
}

// WithFallback adds a second schema consulted only for $defs the first
// does not have.
func (v *Validator) WithFallback(path string) error {
	x, err := Load(path)
	if err != nil {
		return err
	}
	v.extra = x
	return nil
}

// Load compiles the schema at path.
func Load(path string) (*Validator, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	abs, _ := filepath.Abs(path)
	v := &Validator{url: "file://" + filepath.ToSlash(abs), c: jsonschema.NewCompiler(), memo: map[string]*jsonschema.Schema{}, defs: map[string]bool{}}
	if err := v.c.AddResource(v.url, doc); err != nil {
		return nil, err
	}
	if m, ok := doc.(map[string]any); ok {
		if d, ok := m["$defs"].(map[string]any); ok {
			for k := range d {
				v.defs[k] = true
			}
		}
	}
	return v, nil
}

// Has reports whether the schema defines $defs/name.
func (v *Validator) Has(name string) bool { return v.defs[name] }

func (v *Validator) schema(ptr string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.memo[ptr]; ok {
		return s, nil
	}
	s, err := v.c.Compile(v.url + "#" + ptr)
	if err != nil {
		return nil, err
	}
	v.memo[ptr] = s
	return s, nil
}

func (v *Validator) check(ptr string, inst any) error {
	s, err := v.schema(ptr)
	if err != nil {
		return err
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("against %s: %v", ptr, err)
	}
	return nil
}

// frame is the decoded JSON-RPC envelope of one line.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// Validate checks one frame sent by side. For a response, reqMethod is the
// method of the request it answers ("" if unknown: only the envelope and,
// for errors, the Error object are checked). It returns the $defs entry
// the payload was checked against, or "" when the schema has none for the
// method (then only the envelope was checked).
func (v *Validator) Validate(side Side, line []byte, reqMethod string) (string, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	top := "/anyOf/0" // the schema's "Agent" message
	if side == Client {
		top = "/anyOf/1"
	}
	if err := v.check(top, inst); err != nil {
		return "", err
	}
	var f frame
	if err := json.Unmarshal(line, &f); err != nil {
		return "", err
	}
	def, part := v.payload(side, f, reqMethod)
	if def == "" {
		return "", nil
	}
	pinst, err := jsonschema.UnmarshalJSON(bytes.NewReader(part))
	if err != nil {
		return "", err
	}
	switch {
	case v.Has(def):
		return def, v.check("/$defs/"+def, pinst)
	case v.extra != nil && v.extra.Has(def):
		return def + " (fallback schema)", v.extra.check("/$defs/"+def, pinst)
	}
	return "", nil
}

// payload picks the $defs entry for f and the part of f it describes.
func (v *Validator) payload(side Side, f frame, reqMethod string) (string, []byte) {
	isErr := f.Error != nil && !bytes.Equal(f.Error, []byte("null"))
	switch {
	case f.Method != "" && side == Client:
		return clientRequests[f.Method], orNull(f.Params)
	case f.Method != "":
		return agentRequests[f.Method], orNull(f.Params)
	case isErr:
		return "Error", f.Error
	case side == Agent:
		return agentResults[reqMethod], orNull(f.Result)
	default:
		return clientResults[reqMethod], orNull(f.Result)
	}
}

func orNull(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}
