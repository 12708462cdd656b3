package guard

import (
	"reflect"
	"testing"

	"github.com/acp-guard/acp-guard/transport"
)

func TestRareFramesDecoded(t *testing.T) {
	if n, ok := agentInfo([]byte(`{"protocolVersion":1,"agentInfo":{"name":"codex-acp","version":"0.16"},"agentCapabilities":{"x":[1,2]}}`)); !ok || n.Name != "codex-acp" || n.Version != "0.16" {
		t.Errorf("agentInfo: %+v %v", n, ok)
	}
	if _, ok := agentInfo([]byte(`{"protocolVersion":1}`)); ok {
		t.Error("agentInfo without agentInfo")
	}
	if m, ok := requestedModel([]byte(`{"sessionId":"s","modelId":"model-b"}`)); !ok || m != "model-b" {
		t.Errorf("requestedModel: %q %v", m, ok)
	}
	for _, tt := range []struct {
		raw     string
		code    int
		codeOK  bool
		message string
		data    string
	}{
		{`{"code":-32603,"message":"Internal error","data":{"a":1}}`, -32603, true, "Internal error", `{"a":1}`},
		{`{"code":"E1","message":"odd code","data":"x"}`, 0, false, "odd code", `"x"`},
		{`{"message":"no code"}`, 0, false, "no code", ``},
		{`{"code":-32603.0,"message":7,"data":null}`, 0, false, "", `null`},
		{`{"code":-32000,"message":"esc \u00e9\n"}`, -32000, true, "esc é\n", ``},
	} {
		e := decodeRPCError([]byte(tt.raw))
		if e.Code != tt.code || e.codeOK != tt.codeOK || e.Message != tt.message || string(e.Data) != tt.data {
			t.Errorf("decodeRPCError(%s): code %d codeOK %v message %q data %s", tt.raw, e.Code, e.codeOK, e.Message, e.Data)
		}
	}
	// The relay's refusal of a request of acp-guard's own.
	refusal := decodeRPCError(transport.ParseMsg(transport.ErrorResponse([]byte(`"acp-guard:1"`), -32603, "agent exited",
		map[string]any{"acpGuard": map[string]any{"reason": "agent_exited", "notSent": true}})).Error)
	if !refusal.refused || refusal.notSent != "agent_exited" {
		t.Errorf("refusal: refused %v reason %q", refusal.refused, refusal.notSent)
	}
	if agent := decodeRPCError([]byte(`{"code":1,"message":"m","data":{"notSent":true}}`)); agent.refused {
		t.Error("an agent's data.notSent is not the relay's refusal")
	}
}

func TestLearnSessionConfigOptions(t *testing.T) {
	for name, tt := range map[string]struct {
		result string
		option string
		values []string
		cur    string
	}{
		"models": {`{"sessionId":"s1","models":{"availableModels":[{"modelId":"a","name":"A"},{"modelId":"b","name":"B"}],"currentModelId":"a"}}`,
			"", nil, "a"},
		"select, ungrouped": {`{"sessionId":"s1","configOptions":[{"type":"boolean","id":"fast","name":"Fast","currentValue":true},{"type":"select","id":"m","name":"Model","category":"model","currentValue":"a","options":[{"value":"a","name":"A"},{"value":"b","name":"B"}]}]}`,
			"m", []string{"a", "b"}, "a"},
		"select, grouped": {`{"sessionId":"s1","configOptions":[{"type":"select","id":"m","name":"Model","category":"model","currentValue":"a","options":[{"group":"g","name":"G","options":[{"value":"a","name":"A"},{"value":"c","name":"C"}]}]}]}`,
			"m", []string{"a", "c"}, "a"},
		"no type, id model": {`{"sessionId":"s1","configOptions":[{"id":"model","name":"Model","currentValue":"x","options":[{"value":"x","name":"X"}]}]}`,
			"model", []string{"x"}, "x"},
	} {
		g := New(Config{})
		req := &transport.Request{SessionID: ""}
		g.ag.learnSession(req, &transport.Msg{Result: []byte(tt.result)})
		info := g.ag.sessions["s1"]
		if info == nil || info.modelOption != tt.option || !reflect.DeepEqual(info.optionValues, tt.values) || info.currentModel != tt.cur {
			t.Errorf("%s: got %+v", name, info)
		}
	}
}
