package fakeprovider

// openAIChat speaks the OpenAI Chat Completions API (/v1/chat/completions),
// what OpenAI-compatible clients (Copilot CLI BYOK, qwen-code, Kilo's
// @ai-sdk/openai-compatible) use.
type openAIChat struct{}

func (openAIChat) chunk(model string, delta map[string]any, finish any) map[string]any {
	return map[string]any{
		"id": "chatcmpl-fake-1", "object": "chat.completion.chunk", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	}
}

func (o openAIChat) stream(model, text string) ([]event, int, int) {
	evs := []event{{data: mustJSON(o.chunk(model, map[string]any{"role": "assistant", "content": ""}, nil))}}
	first := len(evs)
	for _, c := range chunks(text) {
		evs = append(evs, event{data: mustJSON(o.chunk(model, map[string]any{"content": c}, nil))})
	}
	after := len(evs)
	final := o.chunk(model, map[string]any{}, "stop")
	final["usage"] = map[string]any{"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
	evs = append(evs, event{data: mustJSON(final)}, event{data: []byte("[DONE]")})
	return evs, first, after
}

func (o openAIChat) plain(route, model, text string) any {
	if route == RouteModels {
		return openAI{}.plain(route, model, text)
	}
	return map[string]any{
		"id": "chatcmpl-fake-1", "object": "chat.completion", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text}}},
		"usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
	}
}
