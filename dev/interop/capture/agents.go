package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Stable strings that replace machine-specific ones in transcripts.
const (
	StableHome = "/tmp/acp-capture/home"
	StableCwd  = "/tmp/acp-capture/work"
	StableURL  = "http://127.0.0.1:8787"
	StableNode = "/opt/acp-guard-interop"
)

// Fake credentials: obviously not secrets.
const (
	FakeOpenAIKey    = "sk-test-fake"
	FakeAnthropicKey = "sk-ant-test-fake"
	FakeGeminiKey    = "AIza-test-fake"
)

// Launch is how to start one agent for one capture.
type Launch struct {
	Argv       []string
	Env        []string
	AuthMethod string
	Settings   map[string]string // file (relative to home) → content, for the doc
}

// Agent knows how to launch one real agent against a fake provider.
type Agent struct {
	Name    string // directory name under testdata/transcripts/real
	Adapter string // meta adapter (the agent's agentInfo.name)
	API     string // "openai" (Responses), "chat" (Chat Completions), "anthropic" or "gemini"
	Retries int    // agent-internal retries to configure (-1: the agent's default)
	// Setup writes the agent's configuration under home and returns the
	// launch. cache is the install folder (dev/interop/install.sh), url the
	// fake provider's base URL, tune the scenario's agent knobs.
	Setup func(cache, home, url string, tune Tune) (Launch, error)
}

// Tune holds per-scenario agent knobs.
type Tune struct {
	Retries     int           // agent-internal retries (-1: agent default)
	IdleTimeout time.Duration // stream idle / request timeout (0: agent default)
}

// keepEnv lists the variables inherited from the caller; everything else
// (including real credentials) is left out.
var keepEnv = []string{"PATH", "LANG", "TZ"}

func writeFiles(home string, files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Agents returns the known agents by name.
func Agents() map[string]Agent {
	m := map[string]Agent{
		// codex's defaults (4 request retries, 5 stream retries, short
		// backoff) finish within the capture timeout; claude's (10 retries,
		// backoff to 32 s) and gemini's (10 attempts, 5-30 s delays) do not.
		"codex":  {Name: "codex", Adapter: "codex-acp", API: "openai", Retries: -1, Setup: setupCodex},
		"claude": {Name: "claude", Adapter: "claude-agent-acp", API: "anthropic", Retries: 2, Setup: setupClaude},
		"gemini": {Name: "gemini", Adapter: "gemini-cli", API: "gemini", Retries: 2, Setup: setupGemini},
	}
	for _, a := range append(append([]Agent(nil), fieldAgents...), moreAgents...) {
		m[a.Name] = a
	}
	return m
}

// AgentNames returns the agent names, sorted.
func AgentNames() []string {
	var n []string
	for k := range Agents() {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func setupCodex(cache, home, url string, tune Tune) (Launch, error) {
	bin := filepath.Join(cache, "node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp")
	var knobs strings.Builder
	if tune.Retries >= 0 {
		fmt.Fprintf(&knobs, "request_max_retries = %d\nstream_max_retries = %d\n", tune.Retries, tune.Retries)
	}
	if tune.IdleTimeout > 0 {
		fmt.Fprintf(&knobs, "stream_idle_timeout_ms = %d\n", tune.IdleTimeout.Milliseconds())
	}
	config := `model = "gpt-5.4"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[model_providers.fake]
name = "fake"
base_url = "` + url + `/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
` + knobs.String()
	files := map[string]string{".codex/config.toml": config}
	if err := writeFiles(home, files); err != nil {
		return Launch{}, err
	}
	return Launch{
		Argv: []string{bin},
		Env: Env(keepEnv, "HOME="+home, "CODEX_HOME="+filepath.Join(home, ".codex"),
			"OPENAI_API_KEY="+FakeOpenAIKey, "RUST_LOG=warn", "NO_COLOR=1"),
		Settings: files,
	}, nil
}

func setupClaude(cache, home, url string, tune Tune) (Launch, error) {
	env := []string{
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_API_KEY=" + FakeAnthropicKey,
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"NO_COLOR=1",
	}
	if tune.Retries >= 0 {
		env = append(env, fmt.Sprintf("CLAUDE_CODE_MAX_RETRIES=%d", tune.Retries))
	}
	if tune.IdleTimeout > 0 {
		env = append(env, fmt.Sprintf("API_TIMEOUT_MS=%d", tune.IdleTimeout.Milliseconds()))
	}
	files := map[string]string{".claude/settings.json": `{"permissions":{"defaultMode":"default"}}` + "\n"}
	if err := writeFiles(home, files); err != nil {
		return Launch{}, err
	}
	return Launch{
		Argv:     []string{"node", filepath.Join(cache, "node_modules/@zed-industries/claude-agent-acp/dist/index.js")},
		Env:      Env(keepEnv, env...),
		Settings: files,
	}, nil
}

func setupGemini(cache, home, url string, tune Tune) (Launch, error) {
	general := `"enableAutoUpdate":false,"enableAutoUpdateNotification":false`
	if tune.Retries >= 0 {
		general += fmt.Sprintf(`,"maxAttempts":%d`, tune.Retries+1)
	}
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},` +
		`"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},` +
		`"general":{` + general + `},"model":{"name":"gemini-2.5-flash"}}` + "\n"
	files := map[string]string{".gemini/settings.json": settings}
	if err := writeFiles(home, files); err != nil {
		return Launch{}, err
	}
	return Launch{
		Argv: []string{"node", filepath.Join(cache, "node_modules/@google/gemini-cli/bundle/gemini.js"), "--acp"},
		Env: Env(keepEnv, "HOME="+home, "GEMINI_API_KEY="+FakeGeminiKey, "GOOGLE_GEMINI_BASE_URL="+url,
			"GEMINI_TELEMETRY_ENABLED=false", "NO_COLOR=1", "GEMINI_CLI_NO_RELAUNCH=true"),
		AuthMethod: "gemini-api-key",
		Settings:   files,
	}, nil
}
