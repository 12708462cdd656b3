package capture

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// bodyAPI is the API whose error bodies a scenario uses: Chat Completions
// providers answer errors with OpenAI's bodies.
func bodyAPI(api string) string {
	if api == "chat" {
		return "openai"
	}
	return api
}

// FakeModel is the model the Chat Completions agents are configured with.
const FakeModel = "fake-model"

// fieldAgents are OpenAI-compatible agents (Copilot CLI, qwen-code, Kilo): each talks
// Chat Completions to the fake provider and needs no login.
var fieldAgents = []Agent{
	{Name: "copilot", Adapter: "copilot-cli", API: "chat", Retries: -1, Setup: setupCopilot},
	{Name: "qwen", Adapter: "qwen-code", API: "chat", Retries: 1, Setup: setupQwen},
	{Name: "kilo", Adapter: "kilo", API: "chat", Retries: 1, Setup: setupKilo},
}

// setupCopilot runs GitHub Copilot CLI 1.0.102 in ACP mode with a BYOK
// provider (COPILOT_PROVIDER_BASE_URL) and COPILOT_OFFLINE: no GitHub login.
// The native binary unpacks itself into COPILOT_CACHE_HOME once; a shared
// folder under the install cache keeps that out of every capture.
func setupCopilot(cache, home, url string, tune Tune) (Launch, error) {
	bin := filepath.Join(cache, "node_modules/@github/copilot-linux-x64/copilot")
	return Launch{
		Argv: []string{bin, "--acp"},
		Env: Env(keepEnv, "HOME="+home, "COPILOT_HOME="+filepath.Join(home, ".copilot"),
			"COPILOT_CACHE_HOME="+filepath.Join(cache, "copilot-cache"),
			"COPILOT_PROVIDER_BASE_URL="+url+"/v1", "COPILOT_PROVIDER_API_KEY="+FakeOpenAIKey,
			"COPILOT_PROVIDER_MODEL_ID="+FakeModel, "COPILOT_MODEL="+FakeModel,
			"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false", "COPILOT_DISABLE_KEYTAR=1", "NO_COLOR=1"),
	}, nil
}

// setupQwen runs qwen-code 0.24.4 (`qwen --acp`) with OpenAI auth.
func setupQwen(cache, home, url string, tune Tune) (Launch, error) {
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "openai"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"model":     map[string]any{"name": FakeModel},
	}
	if tune.Retries >= 0 {
		settings["generationConfig"] = map[string]any{"maxRetries": tune.Retries}
	}
	b, _ := json.Marshal(settings)
	files := map[string]string{".qwen/settings.json": string(b) + "\n"}
	if err := writeFiles(home, files); err != nil {
		return Launch{}, err
	}
	return Launch{
		Argv: []string{"node", filepath.Join(cache, "node_modules/@qwen-code/qwen-code/cli-entry.js"), "--acp"},
		Env: Env(keepEnv, "HOME="+home, "OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY="+FakeOpenAIKey,
			"OPENAI_MODEL="+FakeModel, "NO_COLOR=1"),
		AuthMethod: "openai",
		Settings:   files,
	}, nil
}

// setupKilo runs Kilo CLI 7.7.9 (`kilo acp`) with a custom
// @ai-sdk/openai-compatible provider given inline (KILO_CONFIG_CONTENT).
func setupKilo(cache, home, url string, tune Tune) (Launch, error) {
	cfg := map[string]any{
		"$schema": "https://app.kilo.ai/config.json",
		"model":   "fake/" + FakeModel,
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "fake",
			"options": map[string]any{"baseURL": url + "/v1", "apiKey": FakeOpenAIKey},
			"models":  map[string]any{FakeModel: map[string]any{"name": FakeModel}},
		}},
		"autoupdate": false, "share": "disabled",
	}
	b, _ := json.Marshal(cfg)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local/share"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"KILO_CONFIG_CONTENT=" + string(b), "KILO_DISABLE_MODELS_FETCH=true", "KILO_DISABLE_DEFAULT_PLUGINS=true",
		"KILO_DISABLE_SHARE=true", "KILO_DISABLE_SESSION_INGEST=true", "NO_COLOR=1"}
	if tune.Retries >= 0 {
		env = append(env, fmt.Sprintf("KILO_SESSION_RETRY_LIMIT=%d", tune.Retries))
	}
	return Launch{
		Argv:     []string{filepath.Join(cache, "node_modules/@kilocode/cli-linux-x64/bin/kilo"), "acp"},
		Env:      Env(keepEnv, env...),
		Settings: map[string]string{"KILO_CONFIG_CONTENT": string(b)},
	}, nil
}
