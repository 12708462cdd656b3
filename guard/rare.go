package guard

import (
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/transport"
)

// Rare frames — initialize and session setup results, set_model requests,
// JSON-RPC error objects — are decoded here with encoding/json into the
// ACP SDK's types; the hand-written scanner (internal/jsonscan) stays on
// the hot path (transport.ParseMsg, observers). Each decoder reads only the
// members the guard uses, so an agent's extension elsewhere in the frame
// cannot make it lose them.

// agentName returns agentInfo.name of an initialize result.
func agentName(result []byte) (string, bool) {
	var r struct {
		AgentInfo *acp.Implementation `json:"agentInfo"`
	}
	if json.Unmarshal(result, &r) != nil || r.AgentInfo == nil || r.AgentInfo.Name == "" {
		return "", false
	}
	return r.AgentInfo.Name, true
}

// requestedModel returns the modelId of session/set_model params.
func requestedModel(params []byte) (string, bool) {
	var p struct {
		ModelID *acp.ModelId `json:"modelId"`
	}
	if json.Unmarshal(params, &p) != nil || p.ModelID == nil {
		return "", false
	}
	return string(*p.ModelID), true
}

// rpcErrorObject is a JSON-RPC error object: code and message as the SDK
// has them, data kept raw for the classifier.
type rpcErrorObject struct {
	acp.RequestError
	Data json.RawMessage `json:"data"`
	// codeOK is false when the code is missing or not an integer.
	codeOK bool
}

// decodeRPCError reads an error object; a member of the wrong type is left
// out and the others kept.
func decodeRPCError(raw []byte) rpcErrorObject {
	var e rpcErrorObject
	err := json.Unmarshal(raw, &e)
	var probe struct {
		Code json.RawMessage `json:"code"`
	}
	_ = json.Unmarshal(raw, &probe)
	e.codeOK = probe.Code != nil && (err == nil || !isTypeErrorAt(err, "code"))
	return e
}

func isTypeErrorAt(err error, field string) bool {
	te, ok := err.(*json.UnmarshalTypeError)
	return ok && (te.Field == field || te.Field == "RequestError."+field)
}

// sessionSetup is what the guard learns from session/new, load, resume and
// fork results: the session id, the model state, the config options.
type sessionSetup struct {
	SessionID     acp.SessionId          `json:"sessionId"`
	Models        *acp.SessionModelState `json:"models"`
	ConfigOptions []json.RawMessage      `json:"configOptions"`
}

// learnSession records the models a new or loaded session offers: the
// model state, and a select config option of category "model" (or, with
// no category, the id "model"), whose values the session can switch to.
func (g *Guard) learnSession(req *transport.Request, m *transport.Msg) {
	var r sessionSetup
	if m.Result == nil || json.Unmarshal(m.Result, &r) != nil {
		return
	}
	sid := req.SessionID
	if r.SessionID != "" {
		sid = string(r.SessionID)
	}
	if sid == "" {
		return
	}
	info := g.session(sid)
	if r.Models != nil {
		info.currentModel = string(r.Models.CurrentModelId)
		info.models = info.models[:0]
		for _, mi := range r.Models.AvailableModels {
			info.models = append(info.models, string(mi.ModelId))
		}
	}
	for _, raw := range r.ConfigOptions {
		if sel, ok := modelOption(raw); ok {
			info.modelOption = string(sel.Id)
			info.optionValues = optionValues(sel.Options)
			if info.currentModel == "" {
				info.currentModel = string(sel.CurrentValue)
			}
		}
	}
}

// learnConfigResult records the model a session/set_config_option result
// says the session now runs on (its configOptions hold the model option's
// current value).
func (g *Guard) learnConfigResult(req *transport.Request, m *transport.Msg) {
	var r sessionSetup
	if m.Error != nil || m.Result == nil || req.SessionID == "" || json.Unmarshal(m.Result, &r) != nil {
		return
	}
	for _, raw := range r.ConfigOptions {
		if sel, ok := modelOption(raw); ok && sel.CurrentValue != "" {
			info := g.session(req.SessionID)
			info.modelOption = string(sel.Id)
			info.optionValues = optionValues(sel.Options)
			info.currentModel = string(sel.CurrentValue)
		}
	}
}

// modelOption decodes a config option that selects the model.
func modelOption(raw json.RawMessage) (acp.SessionConfigOptionSelect, bool) {
	var sel acp.SessionConfigOptionSelect
	if json.Unmarshal(raw, &sel) != nil || (sel.Type != "" && sel.Type != "select") {
		return sel, false
	}
	if sel.Category != nil {
		return sel, *sel.Category == acp.SessionConfigOptionCategoryModel
	}
	return sel, sel.Id == "model"
}

// optionValues lists a select option's values, grouped or not.
func optionValues(o acp.SessionConfigSelectOptions) []string {
	var out []string
	if o.Ungrouped != nil {
		for _, v := range *o.Ungrouped {
			out = append(out, string(v.Value))
		}
	}
	if o.Grouped != nil {
		for _, grp := range *o.Grouped {
			for _, v := range grp.Options {
				out = append(out, string(v.Value))
			}
		}
	}
	return out
}
