package classify

import (
	"strings"
	"testing"
)

// TestScriptQuote: quote marks of other scripts mark a mention after a word
// of any script or when the word for an error follows the closing mark; a
// quote after a colon, or one that opens the text with nothing after it,
// stays the report's own.
func TestScriptQuote(t *testing.T) {
	for _, tt := range []struct {
		text, match string
		in, mention bool
	}{
		{"Ein „Bad Gateway“ bedeutet, dass …", "Bad Gateway", true, true},
		{"Le message «quota exceeded» apparaît parfois", "quota exceeded", true, true},
		{"「Unauthorized」エラーが出る場合", "Unauthorized", true, true},
		{"出现『rate limit exceeded』的提示", "rate limit exceeded", true, true},
		{"Fehler: „rate limit exceeded“", "rate limit exceeded", true, false},
		{"「rate limit exceeded」", "rate limit exceeded", true, false},
		{"rate limit exceeded", "rate limit exceeded", false, false},
		{"„erstens“ und dann rate limit exceeded", "rate limit exceeded", false, false},
	} {
		i := strings.Index(tt.text, tt.match)
		in, mention := scriptQuote(tt.text, i, i+len(tt.match))
		if in != tt.in || mention != tt.mention {
			t.Errorf("scriptQuote(%q, %q): got in %v mention %v, want %v %v", tt.text, tt.match, in, mention, tt.in, tt.mention)
		}
	}
}

// TestMentionLayouts: the layouts and example lists of mention.go read
// alike in the corpora's languages, and an SDK's error line is none of
// them.
func TestMentionLayouts(t *testing.T) {
	for _, tt := range []struct {
		name string
		re   func() bool
		want bool
	}{
		{"example list after 例如", func() bool { return mentionRe().MatchString("识别额度错误，例如 `quota exceeded`、`402`。") }, true},
		{"example list after z. B.", func() bool { return mentionRe().MatchString(`Meldungen z. B. "quota exceeded", "rate limited"`) }, true},
		{"bold-headed list item", func() bool { return docLayoutRe().MatchString("1. **429（请求过多）**：稍后重试。") }, true},
		{"reference entry with a modal", func() bool {
			return docLayoutRe().MatchString("529 - overloaded_error : The API may be temporarily overloaded.")
		}, true},
		{"SDK error line is not a reference entry", func() bool {
			return docLayoutRe().MatchString("Error code: 529 - {'type': 'error', 'error': {'type': 'overloaded_error'}} may retry")
		}, false},
		{"inline cause and remedy", func() bool {
			return docLayoutRe().MatchString("404 | Ursache: falscher Name. Lösung: Modell wählen.")
		}, true},
		{"a cause and a solution (解決策) on one line, in Japanese", func() bool {
			return docLayoutRe().MatchString("429 | 原因：短時間に送信が多すぎます | 解決策：間隔をあけて送信してください")
		}, true},
		{"one hint heading is not a layout", func() bool { return docLayoutRe().MatchString("Error: quota exceeded. Possible cause: a low tier.") }, false},
		{"a chat platform's limit", func() bool { return otherServiceRe().MatchString("request to discord API failed: 429") }, true},
		{"a provider's own limit", func() bool { return otherServiceRe().MatchString("request to api.openai.com failed: 429") }, false},
		{"an app saving its own settings", func() bool { return toolOwnRe().MatchString("could not save your model preferences: failed to fetch") }, true},
		{"a schema check of an app's own data class", func() bool { return toolOwnRe().MatchString("3 validation errors for AgentNodeData") }, true},
		{"a schema check of the request is the request's", func() bool { return toolOwnRe().MatchString("1 validation error for CompletionRequest") }, false},
		{"a provider's unsupported model is no app source", func() bool { return toolOwnRe().MatchString("This model is not supported yet") }, false},
		{"a rule stated as a condition, in Spanish", func() bool {
			return mentionRe().MatchString("Si las solicitudes exceden el límite de 10 por minuto, el servidor responderá con 429.")
		}, true},
		{"a rule stated as a condition, in German (the verb last)", func() bool {
			return mentionRe().MatchString("Wenn die Anfragen das Limit überschreiten, antwortet der Server mit 429.")
		}, true},
		{"a limit met is not a condition, in Spanish", func() bool {
			return mentionRe().MatchString("Se ha superado el límite de peticiones; vuelve a intentarlo en 30 segundos")
		}, false},
		{"a limit met is not a condition", func() bool { return mentionRe().MatchString("Rate limit exceeded: 10 requests per minute.") }, false},
		{"a demand to set up billing is the provider's", func() bool { return mentionRe().MatchString("You need to set up billing to run this model") }, false},
		{"advice to set a value", func() bool { return mentionRe().MatchString("You need to set the base URL to your proxy.") }, true},
		{"a diagnosis of the reader's setup", func() bool { return mentionRe().MatchString("You have a DNS problem. Try another resolver.") }, true},
		{"a maintainer's verdict", func() bool { return discourseRe().MatchString("Not a bug. The model is loading; wait and retry.") }, true},
		{"an opening definition", func() bool { return discourseRe().MatchString("Timeout means that the proxy gave up first.") }, true},
		{"a provider's error is no definition", func() bool { return discourseRe().MatchString("Error: connection refused (os error 111)") }, false},
		{"a policy for hypothetical load", func() bool {
			return discourseRe().MatchString("In heavy-load situations the API answers busy rather than queueing.")
		}, true},
		{"a past run's narrative", func() bool {
			return discourseRe().MatchString("During the nightly eval, the endpoint returned 503 twice.")
		}, true},
		{"a provider's own load is no chatter", func() bool { return discourseRe().MatchString("We're experiencing high demand right now.") }, false},
		{"a user's account is chatter", func() bool { return discourseRe().MatchString("We're hitting 429s since Monday.") }, true},
		{"an explanation in Chinese", func() bool {
			return discourseRe().MatchString("401 很多时候不是模型不可用，而是 key 不匹配。")
		}, true},
		{"a change list in Chinese", func() bool { return discourseRe().MatchString("- 修复：过载时未重试的问题") }, true},
		{"GitHub's limit for an installation is another service's", func() bool {
			return otherServiceRe().MatchString("HttpError: API rate limit exceeded for installation ID 42")
		}, true},
		{"an error in a language other than English defined", func() bool {
			return mentionRe().MatchString("Un error interno del servidor significa que el fallo es del proveedor.")
		}, true},
	} {
		if got := tt.re(); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestEscapedBodyIsRead: a provider body escaped inside a JSON string
// whose own quotes the text lost (a log's `"message": "… {\"error\":…}"`)
// is decoded as the body it is, so its fields are read and the text is
// error-shaped; an escaped quote after a brace with no string around it
// decodes nothing.
func TestEscapedBodyIsRead(t *testing.T) {
	for _, tt := range []struct {
		line   string
		code   string
		shaped bool
	}{
		{`"message": "image failed: {\"error\":{\"message\":\"spend cap hit\",\"code\":\"PRECONDITION_FAILED\"}}",`, "PRECONDITION_FAILED", true},
		{`detail: {\"error\": {\"code\": \"E42\"}}`, "E42", true},
		{`just a brace { \" and no body`, "", false},
	} {
		v := newView(&Evidence{Source: SourceStderr, Stderr: []string{tt.line}})
		var code string
		for _, obj := range v.objectNodes() {
			if e, ok := obj["error"].(map[string]any); ok {
				code, _ = e["code"].(string)
			}
		}
		if code != tt.code || v.errorShaped() != tt.shaped {
			t.Errorf("%q: got code %q shaped %v, want %q %v", tt.line, code, v.errorShaped(), tt.code, tt.shaped)
		}
	}
}
