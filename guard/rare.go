package guard

import (
	"encoding/json"
	"fmt"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
	"github.com/acp-guard/acp-guard/transport"
)

// Rare frames — initialize and session setup results, set_model requests,
// JSON-RPC error objects — are decoded here with encoding/json into the
// ACP SDK's types; the hand-written scanner (internal/jsonscan) stays on
// the hot path (transport.ParseMsg, observers). Each decoder reads only the
// members the guard uses, so an agent's extension elsewhere in the frame
// cannot make it lose them.

// agentInfo returns agentInfo of an initialize result (ok: it names the
// agent).
func agentInfo(result []byte) (acp.Implementation, bool) {
	var r struct {
		AgentInfo *acp.Implementation `json:"agentInfo"`
	}
	jsonscan.Note(result)
	if json.Unmarshal(result, &r) != nil || r.AgentInfo == nil || r.AgentInfo.Name == "" {
		return acp.Implementation{}, false
	}
	return *r.AgentInfo, true
}

// requestedModel returns the modelId of session/set_model params.
func requestedModel(params []byte) (string, bool) {
	var p struct {
		ModelID *acp.ModelId `json:"modelId"`
	}
	jsonscan.Note(params)
	if json.Unmarshal(params, &p) != nil || p.ModelID == nil {
		return "", false
	}
	return string(*p.ModelID), true
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
// It returns the session's id ("" : none learned).
func (a *agent) learnSession(req *transport.Request, m *transport.Msg) string {
	var r sessionSetup
	jsonscan.Note(m.Result)
	if m.Result == nil || json.Unmarshal(m.Result, &r) != nil {
		return ""
	}
	sid := req.SessionID
	if r.SessionID != "" {
		sid = string(r.SessionID)
	}
	if sid == "" {
		return ""
	}
	info := a.session(sid)
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
	return sid
}

// fallbackCheck warns when a fallback model the configuration names is
// not offered in the session the agent just set up (its models and model
// config option): a skip would pass it over without a word. The warning
// is logged once per model and told to the client as a notice for the
// session, after the agent's answer (which then goes out as it came).
func (a *agent) fallbackCheck(c transport.Ctl, req *transport.Request, m *transport.Msg, sid string) transport.Verdict {
	info := a.sessions[sid]
	if info == nil {
		return transport.Forward
	}
	var missing []string
	for _, mdl := range a.fallbacks {
		if !contains(info.models, mdl) && !contains(info.optionValues, mdl) && !contains(missing, mdl) {
			missing = append(missing, mdl)
		}
	}
	if len(missing) == 0 {
		return transport.Forward
	}
	noChoice := len(info.models) == 0 && info.modelOption == ""
	for _, mdl := range missing {
		if !a.warned[mdl] {
			if a.warned == nil {
				a.warned = map[string]bool{}
			}
			a.warned[mdl] = true
			a.log.Warn("fallback model not offered by the agent; it will not be switched to", "model", mdl, "session", sid,
				"agent_offers_models", !noChoice)
		}
	}
	if a.ev.notices == NoticesOff {
		return transport.Forward
	}
	line := m.Line
	if string(m.ID) != string(req.ID) {
		line = applyEdits(line, idEdit(line, m.ID, req.ID))
	}
	c.Reply(req, line)
	text := fmt.Sprintf("acp-guard: fallback model %s not offered by the agent in this session; it will not be switched to", strings.Join(missing, ", "))
	if noChoice {
		text = fmt.Sprintf("acp-guard: the agent offers no model choice in this session; fallback model %s will not be used", strings.Join(missing, ", "))
	}
	a.ev.notify(c, sid, text, map[string]any{"warning": map[string]any{"code": "fallback_model_not_offered", "models": missing}})
	return transport.Drop
}

// learnConfigResult records the model a session/set_config_option result
// says the session now runs on (its configOptions hold the model option's
// current value).
func (a *agent) learnConfigResult(req *transport.Request, m *transport.Msg) {
	var r sessionSetup
	if m.Error != nil || m.Result == nil || req.SessionID == "" || json.Unmarshal(m.Result, &r) != nil {
		return
	}
	for _, raw := range r.ConfigOptions {
		if sel, ok := modelOption(raw); ok && sel.CurrentValue != "" {
			info := a.session(req.SessionID)
			info.modelOption = string(sel.Id)
			info.optionValues = optionValues(sel.Options)
			info.currentModel = string(sel.CurrentValue)
		}
	}
}

// modelOption decodes a config option that selects the model.
func modelOption(raw json.RawMessage) (acp.SessionConfigOptionSelect, bool) {
	var sel acp.SessionConfigOptionSelect
	jsonscan.Note(raw)
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
