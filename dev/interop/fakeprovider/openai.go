package fakeprovider

import (
	"encoding/json"
	"strings"
)

// openAI speaks the OpenAI Responses API.
type openAI struct{}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps and slices of plain values are marshalled
	}
	return b
}

// chunks splits text into at most three deltas at spaces.
func chunks(text string) []string {
	if text == "" {
		return nil
	}
	words := strings.SplitAfter(text, " ")
	if len(words) <= 3 {
		return words
	}
	third := (len(words) + 2) / 3
	var out []string
	for i := 0; i < len(words); i += third {
		out = append(out, strings.Join(words[i:min(i+third, len(words))], ""))
	}
	return out
}

func (openAI) response(model, status string, output []any) map[string]any {
	r := map[string]any{
		"id": "resp_fake_1", "object": "response", "created_at": 1700000000,
		"status": status, "model": model, "output": output,
	}
	if status == "completed" {
		r["usage"] = map[string]any{
			"input_tokens": 12, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 7, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": 19,
		}
	}
	return r
}

func (o openAI) stream(model, text string) ([]event, int, int) {
	const itemID = "msg_fake_1"
	seq := 0
	ev := func(typ string, fields map[string]any) event {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return event{name: typ, data: mustJSON(fields)}
	}
	item := func(status string, content []any) map[string]any {
		return map[string]any{"id": itemID, "type": "message", "status": status, "role": "assistant", "content": content}
	}
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	evs := []event{
		ev("response.created", map[string]any{"response": o.response(model, "in_progress", []any{})}),
		ev("response.in_progress", map[string]any{"response": o.response(model, "in_progress", []any{})}),
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": item("in_progress", []any{})}),
		ev("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}),
	}
	first := len(evs)
	for _, c := range chunks(text) {
		evs = append(evs, ev("response.output_text.delta", map[string]any{
			"item_id": itemID, "output_index": 0, "content_index": 0, "delta": c}))
	}
	after := len(evs)
	evs = append(evs,
		ev("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": text}),
		ev("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part}),
		ev("response.output_item.done", map[string]any{"output_index": 0, "item": item("completed", []any{part})}),
		ev("response.completed", map[string]any{"response": o.response(model, "completed", []any{item("completed", []any{part})})}),
	)
	return evs, first, after
}

func (o openAI) plain(route, model, text string) any {
	if route == RouteModels {
		return map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "gpt-5", "object": "model", "created": 1700000000, "owned_by": "fakeprovider"},
			map[string]any{"id": "gpt-5-codex", "object": "model", "created": 1700000000, "owned_by": "fakeprovider"},
		}}
	}
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	return o.response(model, "completed", []any{map[string]any{
		"id": "msg_fake_1", "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}})
}

// anthropic speaks the Anthropic Messages API.
type anthropic struct{}

func (anthropic) message(model string, content []any, stop any, out int) map[string]any {
	return map[string]any{
		"id": "msg_fake_1", "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 12, "output_tokens": out,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}
}

func (a anthropic) stream(model, text string) ([]event, int, int) {
	ev := func(typ string, fields map[string]any) event {
		fields["type"] = typ
		return event{name: typ, data: mustJSON(fields)}
	}
	evs := []event{
		ev("message_start", map[string]any{"message": a.message(model, []any{}, nil, 1)}),
		ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
		ev("ping", map[string]any{}),
	}
	first := len(evs)
	for _, c := range chunks(text) {
		evs = append(evs, ev("content_block_delta", map[string]any{
			"index": 0, "delta": map[string]any{"type": "text_delta", "text": c}}))
	}
	after := len(evs)
	evs = append(evs,
		ev("content_block_stop", map[string]any{"index": 0}),
		ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": 7}}),
		ev("message_stop", map[string]any{}),
	)
	return evs, first, after
}

func (a anthropic) plain(route, model, text string) any {
	if route == RouteCountTokens {
		return map[string]any{"input_tokens": 12}
	}
	return a.message(model, []any{map[string]any{"type": "text", "text": text}}, "end_turn", 7)
}

// gemini speaks the Gemini API (generativelanguage v1beta).
type gemini struct{}

func (gemini) chunk(model, text, finish string) []byte {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	return mustJSON(map[string]any{
		"candidates":    []any{cand},
		"usageMetadata": map[string]any{"promptTokenCount": 12, "candidatesTokenCount": 7, "totalTokenCount": 19},
		"modelVersion":  model,
		"responseId":    "fake-response-1",
	})
}

func (g gemini) stream(model, text string) ([]event, int, int) {
	var evs []event
	cs := chunks(text)
	if len(cs) == 0 {
		cs = []string{""} // an empty answer still finishes
	}
	for i, c := range cs {
		finish := ""
		if i == len(cs)-1 {
			finish = "STOP"
		}
		evs = append(evs, event{data: g.chunk(model, c, finish)})
	}
	// Every Gemini event carries text; "after_text" keeps all but the
	// final (finishReason) chunk when there is more than one.
	after := len(evs)
	if after > 1 {
		after--
	}
	return evs, 0, after
}

func (g gemini) plain(route, model, text string) any {
	switch route {
	case RouteGeminiCount:
		return map[string]any{"totalTokens": 12}
	case RouteModels:
		return map[string]any{"models": []any{
			map[string]any{"name": "models/gemini-2.5-pro", "displayName": "Gemini 2.5 Pro (fake)"},
			map[string]any{"name": "models/gemini-2.5-flash", "displayName": "Gemini 2.5 Flash (fake)"},
		}}
	}
	var v any
	_ = json.Unmarshal(g.chunk(model, text, "STOP"), &v)
	return v
}
