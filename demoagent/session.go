package demoagent

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	acp "github.com/coder/acp-go-sdk"
)

// Version is reported as agentInfo.version.
const Version = "0.1.0"

// Methods of the test extension (see doc.go).
const (
	methodEcho   = "test/echo"
	methodMirror = "test/mirror"
)

// modelConfigID is the id of the model select option in configOptions.
const modelConfigID = "model"

// Models lists the models every session offers; the first is current.
var Models = []acp.ModelInfo{
	{ModelId: "model-a", Name: "Model A"},
	{ModelId: "model-b", Name: "Model B"},
	{ModelId: "model-c", Name: "Model C"},
}

func (a *agent) initializeResult() acp.InitializeResponse {
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{
			PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true},
		},
		AgentInfo:   &acp.Implementation{Name: a.opts.AgentName, Version: Version},
		AuthMethods: []acp.AuthMethod{},
	}
}

func knownModel(id string) bool {
	return slices.ContainsFunc(Models, func(m acp.ModelInfo) bool { return string(m.ModelId) == id })
}

func modelConfigOptions(current string) []acp.SessionConfigOption {
	values := make(acp.SessionConfigSelectOptionsUngrouped, len(Models))
	for i, m := range Models {
		values[i] = acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m.ModelId), Name: m.Name}
	}
	cat := acp.SessionConfigOptionCategoryModel
	return []acp.SessionConfigOption{{Select: &acp.SessionConfigOptionSelect{
		Id:           modelConfigID,
		Name:         "Model",
		Category:     &cat,
		CurrentValue: acp.SessionConfigValueId(current),
		Options:      acp.SessionConfigSelectOptions{Ungrouped: &values},
		Type:         "select",
	}}}
}

func (a *agent) newSession() acp.NewSessionResponse {
	a.mu.Lock()
	a.sessions++
	id := fmt.Sprintf("sess-%d", a.sessions)
	current := string(Models[0].ModelId)
	a.models[id] = current
	a.mu.Unlock()
	return acp.NewSessionResponse{
		SessionId:     acp.SessionId(id),
		Models:        &acp.SessionModelState{AvailableModels: Models, CurrentModelId: acp.ModelId(current)},
		ConfigOptions: modelConfigOptions(current),
	}
}

// model returns the session's current model and whether the session exists.
func (a *agent) model(sessionID string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m, ok := a.models[sessionID]
	return m, ok
}

// switchModel sets the session's model, or explains why it cannot.
func (a *agent) switchModel(sessionID, model string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.models[sessionID]; !ok {
		return fmt.Errorf("unknown session %q", sessionID)
	}
	if !knownModel(model) {
		return fmt.Errorf("unknown model %q", model)
	}
	a.models[sessionID] = model
	return nil
}

func (a *agent) setModel(m *inbound) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModelID   string `json:"modelId"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: "+err.Error())
		return
	}
	if err := a.switchModel(p.SessionID, p.ModelID); err != nil {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: "+err.Error())
		return
	}
	a.reply(m.ID, struct{}{})
}

func (a *agent) setConfigOption(m *inbound) {
	var p struct {
		SessionID string          `json:"sessionId"`
		ConfigID  string          `json:"configId"`
		Value     json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: "+err.Error())
		return
	}
	var value string
	if p.ConfigID != modelConfigID || json.Unmarshal(p.Value, &value) != nil {
		a.replyError(m.ID, codeInvalidParams, fmt.Sprintf("Invalid params: unknown config option %q or value", p.ConfigID))
		return
	}
	if err := a.switchModel(p.SessionID, value); err != nil {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: "+err.Error())
		return
	}
	a.reply(m.ID, acp.SetSessionConfigOptionResponse{ConfigOptions: modelConfigOptions(value)})
}

// echo writes params.payload, base64-decoded, to stdout as raw bytes, adding
// a newline when the payload does not end with one. It reports whether the
// payload was valid.
func (a *agent) echo(m *inbound) bool {
	var p struct {
		Payload string `json:"payload"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(p.Payload)
	if err != nil {
		return false
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	_ = a.w.write(b, true)
	return true
}
