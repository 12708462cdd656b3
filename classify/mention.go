package classify

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Prose that only mentions a kind of failure — a comment, a log line that
// explains, a maintainer's answer, an agent's account of what happened —
// is not that failure. The phrase table states failures ("rate limit
// exceeded"), and prose can hold the same words ("if you get 'rate limit
// exceeded', the key's tier is too low"). So a text rule of the phrase and
// status tiers (a rule that reads only words, no status, field or prefix)
// counts only when the evidence is shaped like an error report, or when
// nothing in it reads as narrative; so does a status rule when the status
// was read from such prose. Error-shaped (any of):
//
//   - an HTTP status the evidence carries as such: the envelope's, the
//     JSON-RPC code, a status field (status.go) — a status in the words
//     ("when the server returns 503 …") is not a shape;
//   - a provider error body: a JSON or Python-repr object with an "error",
//     "errors" or "error_code" member, or a "type" naming an error;
//   - an error line: the text (or a stderr line) starts with an error head
//     (ParseErrorLine: "Error:", "API Error:", "RateLimitError:", ✕ …) or
//     a command-line client's numbered head ("curl: (92) …").
//
// Narrative (mentionRe): text that opens with a hypothetical or
// conditional frame ("If you get …", "When the API returns …", or a
// sentence "When the limit … is exceeded, X is raised"; a hint
// after the statement, "If you are seeing this repeatedly, …", is the
// provider's own), an explanation of an error ("this
// error means …", "usually indicates", "is caused by"), a first-person
// account ("I got …", "I keep hitting …"; not "we": providers speak
// as "we"), a code comment ("// handle …", "# …"), words quoted after a
// verb of reporting ("saw \"quota exceeded\"", "says 'overloaded'"), or talk about error handling
// in code ("the rate-limit handler", "fixed the quota error handling");
// advice and change notes that open the text ("Make sure your key …",
// "You need to set the base URL …", but not "You need to set up billing",
// a provider's demand,
// "Thanks for reporting", "Adds support for …", a change note's
// "Improved … by retrying 529 errors", "Reword error messages when …",
// "Currently the server
// responds …", "this PR"), "I believe" (not Markdown bold: agents print
// their errors in it), "it indicates
// that …", release notes ("now shows …", "treated as"), and the same in
// Chinese (错误…表示, a status's definition 429属于… or 429 是…, code talk of 捕获
// and except); an explanation that
// opens the text ("This happens when …", "This is a rate limit error.
// You …", 这是…错误 — a hint after the statement stays the provider's),
// a diagnosis of the reader's setup ("You have a network error. Please
// check …"), a hedge that the condition may be no failure at all ("this
// might be OK for local providers", "can safely be ignored"),
// a conditional whose verb is a failure ("When the stream drops, …"),
// words quoted after "surfaces", "displays", "shows", an answer to the
// reader ("What you are seeing is …", "the limit you're hitting") and
// failure words given as examples of strings ("matches on known strings
// like …", "messages such as …"), and a list of quoted strings after an
// example word in any language (例如 `…`、`…`, z. B. "…", "…"); a
// status code's definition ("this status code signals …", "429-Fehler
// bedeuten", "429 is the HTTP error code", an answer that opens "Yes,"),
// a general statement of what a provider returns ("returns HTTP 400 when
// …", a specification's "shall respond with"), change prose ("previously
// retried", "currently treats", a note opening "Parse the …"), and a
// conditional frame that opens the text and exceeds a limit ("If
// requests exceed the limit …", "Caso as requisições ultrapassem o
// limite …", German's verb last: "Wenn … das Limit überschreiten": a
// rule stated, not met; not the reflexive "Se ha superado el límite",
// which is the limit met), a
// Chinese conditional frame (当…时) or Japanese narrative (…たところ,
// …ことが分かった).

var mentionRe = lazyRegexp(`(?i)` +
	`\A\W*(?:if|when|whenever|once) (?:[\w'-]+ ){1,3}?(?:get|gets|getting|got|see|sees|seeing|hit|hits|hitting|encounter\w*|receiv\w+|return\w*|fails?|show\w*|throw\w*|rais\w+|repl(?:y|ies)|respond\w*|sends?|run into|runs into|drops?|dies|ends|breaks|disconnects?|times? out|crash\w*|goes down|stalls?)\b` +
	`|\A\W*(?:make sure|ensure (?:that )?|double-check|you (?:can|could|should|may want to|might want to|need to) (?:try|check|set(?:[ \t]+(?:[^u \t]|u[^p])|[^ \t\w])|use|increase|lower|switch)|try (?:setting|using|adding|increasing|lowering|switching)|to fix this|the (?:fix|solution|workaround) is|thanks\b|thank you(?: (?:so|very) much)?\b(?:[^\n]{0,3}$|[,!.:;]| (?:for (?:reporting|raising|opening|filing|flagging|sharing|the|your|this|these|bringing|letting|pointing|trying|testing|contributing|looking|catching|checking|confirming|helping|providing|posting|submitting|digging|investigating)|all|everyone|guys)\b)|currently\b|adds?\b|added\b|fix(?:es|ed)?\b|improved\b|improves\b|enhanced\b|reworked\b|reword\w*\b|rephrase\w*\b|clarif(?:y|ies|ied)\b|implements?\b|introduces?\b|refactor\w*|this (?:PR|pull request|change|commit|patch)\b)` +
	`|\bthis (?:PR|pull request|commit|patch)\b|\bI (?:believe|think|suspect|guess)\b` +
	`|\b(?:it|this|which) (?:usually |typically |simply |just |only )?(?:indicates|means|suggests) (?:that )?` +
	`|\bnow (?:shows|returns|handles|reports|retries|surfaces|treats|mentions|says|explains|includes|tells)\b|\btreated as\b` +
	`|\A\W*an? \x60?[A-Z]\w*(?:Error|Exception)\x60? (?:usually |typically |generally )?(?:indicates|means|is raised|occurs)\b` +
	`|(?:错误|报错|状态码|\b\d{3}\b)[^\n。]{0,40}?(?:表示|意味着)|\b[1-5]\d\d\s*(?:属于|是指|指的是|代表|是)|被(?:通用)?\s*\x60?except\b|捕获` +
	`|(?:\A\W*|[.!?]\s+)(?:if|when|whenever|once) (?:[\w'\x60.,/*-]+ ){1,10}?(?:is|are|gets?|was) (?:exceeded|hit|reached|raised|thrown|returned)\b` +
	`|\A\W*(?:if|when|whenever|caso|si|cuando|quand) (?:[\p{L}\d'\x60.,/*-]+ ){1,10}?(?:exceeds?|ultrapass\p{L}*|exced\p{L}*|dépass\p{L}*|supera\p{L}*) (?:the |your |o |a |os |as |el |la |los |las |le |les )?(?:limit|límite|quota|cuota|cota)` +
	`|\A\W*(?:wenn|falls) (?:[\p{L}\d'.,-]+ ){1,10}?(?:limit|kontingent|grenze|quota)\p{L}* überschreit` +
	`|\b(?:this|that|the|such an?|these|those) (?:[\x60'"]?[\w.-]+[\x60'"]? )?(?:error|message|failure|exception|response|status)(?: codes?)?s? (?:\([^)\n]{0,60}\) )?(?:usually |typically |generally |often |probably |likely |just |only |simply )?(?:means?|indicates?|happens?|occurs?|is (?:caused|returned|raised|thrown|shown|expected|triggered)|comes? from|suggests?|tells? you|notif(?:y|ies)|signals?|denotes?)\b` +
	`|(?:\b[1-5]\d\d\b|\b(?:fehler|erreurs?|errores?|erros?|error)\b)[^\n.]{0,30}?\b(?:bedeutet|bedeuten|significa|significam|significan|signifie|signifient)\b` +
	`|\b[1-5]\d\d is (?:the|an?) (?:http )?(?:error |status |response )*code\b|\A\W*(?:yes|yeah|no|yep|nope),\s` +
	`|\b(?:returns?|responds? with|sends?) (?:an? |the )?(?:http |status )*[1-5]\d\d\b[^\n.]{0,30}?\bwhen\b|\bshall (?:respond|reply|return) with\b` +
	`|\bpreviously (?:retried|returned|treated|failed|surfaced|showed|reported|raised)\b|\bcurrently (?:treats|retries|returns|handles|surfaces|shows|reports|maps)\b` +
	`|\A\W*(?:parse|map|detect|classify|surface|propagate)s? the\b` +
	`|\A\W*当[^\n。]{1,80}?时|たところ[，、,]|ことが(?:判明|分かった|わかった)` +
	`|\b(?:usually|typically|generally|probably|likely|often) (?:means|indicates|caused by)\b` +
	`|\b(?:is|are|was|were) (?:usually |often |typically )?(?:caused|triggered) by\b` +
	`|\b(?:this|that|it|which) (?:might|may|could|should|can) (?:well |still )?be (?:ok(?:ay)?|fine|expected|harmless|intended|ignored|safely ignored)\b|\b(?:can|may) (?:be )?safely (?:be )?ignored?\b` +
	`|\bI (?:often |usually |sometimes |always |frequently |occasionally )?(?:got|get|see|saw|hit|am getting|keep getting|kept getting|keep hitting|kept hitting|received|encountered|ran into|run into|was getting)\b` +
	`|\bI(?:'m|'ve| am| have) (?:getting|seeing|hitting|been getting|been seeing|been hitting)\b` +
	`|\A\s*(?://|/\*|\*\s|#\s)` +
	`|\b(?:saw|sees|says|said|printed|prints|logged|logs|mentions?|mentioned|quotes?|quoted|surfaces|surfaced|displays|displayed|shows|showed|emits|emitted)\s+["'\x60\x{201C}]` +
	`|\A\W*(?:this|that|it) (?:usually |typically |often |only |just |mostly |sometimes )?(?:happens|occurs) (?:when|if|whenever|because)\b` +
	`|\A\W*(?:this|that|it)(?: i|')s (?:(?:just|probably|likely|most likely|definitely|clearly) )?(?:a|an) (?:[\w-]+ ){1,3}(?:error|issue|problem)\b[^\n]{0,20}?[.!]\s+(?:you|try|please|check|to fix)\b` +
	`|\A\W*这(?:是|就是)[^\n。]{0,80}?(?:错误|报错|问题)` +
	`|\A\W*you(?:'ve| have)(?: got)? (?:a|an) (?:[\w-]+ ){1,3}(?:error|issue|problem)\b[^\n]{0,20}?[.!]\s+(?:you|try|please|check|to fix|this|it)\b` +
	`|\b(?:fix(?:ed|es)?|handl(?:e|es|ed|ing)|refactor(?:ed|s)?|improv(?:e|ed|es)|add(?:ed|s)?) (?:the |a |an |better |proper |more )?(?:[\w-]+ ){0,3}(?:error|exception|failure)s? (?:handling|handler|message|case|path|branch)s?\b` +
	`|\A\W*what you(?:'re| are) (?:seeing|getting|hitting|experiencing|running into)\b|\b(?:the )?(?:error|message|limit|failure|response)s? (?:that )?you(?:'re| are) (?:seeing|getting|hitting)\b` +
	`|\b(?:known |error |specific )*(?:strings|substrings|messages|phrases|patterns|error texts) (?:like|such as)\b|\bmatch(?:es|ing)? on (?:known |error |specific )*(?:strings|messages|patterns|phrases)\b` +
	`|(?:例如|比如|诸如|譬如|例えば|たとえば|예를 들어|z\.\s?B\.|zum Beispiel|por ejemplo|por exemplo|par exemple)\s*[:：,，]?\s*[\x60'"「『“„«][^\n]{1,80}?[\x60'"」』”“»]\s*(?:[、,，/]|or\b|oder\b|o\b|ou\b|或)`)

// quotedRe marks text that quotes a failure as expected output: a test
// assertion ("AssertionError: expected body.message to be 'Internal
// server error'"), an SDK reference's docstring after a class name
// ("APIConnectionError: Raised when …"), another party's transport (an
// MCP server's) or a client's own TypeError in building the error class
// ("APIConnectionError.__init__() missing 3 required positional
// arguments": the code that reports failures broke, whatever failed). It
// keeps a words-only rule out even from error-shaped text.
var quotedRe = lazyRegexp(`(?i)\A\W*[\w.]*(?:Error|Exception):\s*(?:Raised|Thrown) (?:when|if)\b|\bAssertionError\b|\bexpected\b[^\n]{0,80}?\bto (?:equal|deep ?equal|strictly equal|have been called|match snapshot|throw)\b|\bexpected\b[^\n]{0,60}?\bto (?:be|contain|include) ["'\x60]|\bMCP (?:server|error|client)\b|\b\w+(?:Error|Exception)\.__init__\(\) (?:missing \w+ required|got an unexpected|takes \w+ positional)\b`)

// otherServiceRe marks a failure the text attributes to a chat or notes
// platform an agent's tools call, not to a model provider: the request
// named as going to it ("request to discord API failed", "Request to
// slack returned an error 429"), its developer documentation linked from
// the message (Discord's ban notice), or Slack's Web API envelope
// ("ok": false with a snake_case error code; a sentence there is another
// API's, such as OpenRouter's behind a tool), GitHub's API ("API rate
// limit exceeded for installation ID …" or for an address,
// "Authenticated requests get a higher rate limit", "GitHub API 403", a
// token "to talk to github"), and a database driver's errors (psycopg2,
// SQLAlchemy's exceptions, "Is the server running on host"): a test
// suite's database refusing connections is not the provider's network; a
// translation service named ("Google Translation API issue", "Google
// Translate :: …", DeepL), a translator plugin's TranslateException or its
// "Try another translator": its limits are a translator's (an app that
// translates with a model names no such service, and stays read).
// Their limits are theirs; like an MCP server's transport (quotedRe) they
// keep a words-only rule out even from error-shaped text.
var otherServiceRe = lazyRegexp(`(?i)\b(?:request|requests|call|calls|response) (?:to|from) (?:the )?(?:discord|slack|telegram|notion|mattermost|twitch)(?:'s)?(?: web)?(?: api)?\b|\b(?:discord|slack|telegram|notion)(?: web)? api (?:returned|failed|responded)\b|\bhttps?://(?:[\w-]+\.)*(?:discord\.com|discordapp\.com|slack\.com|api\.telegram\.org|api\.notion\.com)/(?:developers|api|docs|reference|bot)\b|"ok"\s*:\s*false\s*,\s*"error"\s*:\s*"[a-z_]+"|\bAPI rate limit exceeded for (?:installation\b|(?:\d{1,3}\.){3}\d{1,3}\b)|\bAuthenticated requests get a higher rate limit\b|\bGitHub API (?:[1-5]\d\d|error|rate limit)\b|\b(?:talk|talks|talking|calls?|requests?) to github\b` +
	`|\b(?:psycopg2?|sqlalchemy\.exc|pymysql|mysql\.connector|redis\.exceptions|pymongo\.errors|asyncpg\.exceptions)\.|\bIs the server running on host\b` +
	`|\b(?:google|deepl|bing|yandex|baidu|microsoft|papago) ?translat(?:e|ion|or)\b|\bTranslateException\b|\btry another translator\b`)

// toolOwnRe marks a failure of another tool's own traffic, named by that
// tool's own marks rather than by a provider: the MCP SDK's client
// transports and package in a stack frame (StreamableHTTPClientTransport,
// HttpClientSseClientTransport, @modelcontextprotocol/sdk and the Java
// SDK's io.modelcontextprotocol), a package manager's debug-log lines (npm's
// "93 silly fetchPackageMetaData …", "npm ERR!"), a download of a package
// or source archive (a .tar.gz, .whl, .crate … URL: no model API serves
// archives), a browser-automation driver's session endpoint
// (WebDriver's /session/<id>/…), an editor extension's requests to its own
// local binary, helper process or language server ("Binary request timed
// out"), and a package manager's fetch of its package index (cargo's
// "spurious network error (2 tries remaining)" retry warning, "failed to
// fetch `…-index`"), and an application's own plumbing: its frontend
// saving its settings to its own backend ("failed to save LLM settings:
// failed to fetch"), its own list of connection sources ("This chat
// completion source is not supported yet") and a schema check of its own
// data classes before any request ("1 validation error for LLMNodeData",
// a pydantic header naming a …Data, …Config, …Settings, …State, …Node or
// …Entity class). Like otherServiceRe they keep a
// words-only rule out even from error-shaped text.
var toolOwnRe = lazyRegexp(`(?i)(?:StreamableHTTP|SSE|Stdio|WebSocket)ClientTransport\b|@modelcontextprotocol/|\bio\.modelcontextprotocol\.` +
	`|(?m:^\s*\d+ (?:silly|verbose|timing) [\w.:-]+ )|(?m:^\s*npm (?:ERR!|error) )` +
	`|\bdownload(?:ing|ed)?\b[^\n]{0,20}?https?://[^\s'"]+\.(?:tar\.gz|tgz|tar\.xz|tar\.bz2|zip|whl|gem|crate|jar|nupkg|deb|rpm)\b` +
	`|\bwith url: /session/[0-9a-f-]{8,}\b|\bselenium\.common\.|\b(?:chrome|gecko|msedge)driver\b` +
	`|\b(?:binary|sidecar binary|helper process|daemon|language server|lsp) (?:requests?|calls?|rpcs?) (?:has |have )?(?:timed out|time-?out|failed)\b` +
	`|\bspurious network error \(\d+ tr(?:y|ies) remaining\)|\bfailed to (?:fetch|update|download|load)\b[^\n]{0,10}?[\x60'"]?https?://\S+?-index[\x60'"]?(?:\s|$)` +
	`|\b(?:failed to|could not|couldn'?t|unable to|cannot|can'?t) (?:save|store|persist|write|update) (?:the |your |its )?(?:[\w-]+ ){0,2}(?:settings|preferences|prefs)\b` +
	`|\b(?:this|that|the selected|the chosen|your) (?:[\w-]+ ){0,3}(?:source|backend type|connection type|api type|provider type) (?:is|are) not (?:yet )?supported\b` +
	`|(?-i:\b\d+ validation errors? for [A-Z]\w*(?:Data|Config|Configuration|Settings|State|Node|Entity)\b)`)

// mentionOnly reports whether the evidence reads as prose about a failure
// rather than a report of one (see above). It is computed once per view.
func (v *view) mentionOnly() bool {
	if v.mentionOK {
		return v.mention
	}
	v.mentionOK = true
	v.mention = v.quoted() || (!v.errorShaped() && v.narrative()) || v.proseDiscourse()
	return v.mention
}

// prose reports whether the evidence is prose an agent or a program
// printed (a message chunk, stderr), where discourse is read; a JSON-RPC
// error and its structured fields never are.
func (v *view) prose() bool {
	return v.ev.Source == SourceMessageChunk || v.ev.Source == SourceStderr
}

// discourseRe marks prose that talks about failures rather than reports
// one (prose sources only, and only when the text is not error-shaped):
//
//   - chatter openings: "I'm seeing …", "we're hitting …", "after
//     upgrading …", "anyone else" (not "we're experiencing", a provider's
//     own words for its load);
//   - commit and changelog headings: "fix:", "feat(client):", "Fixes #12",
//     "Changelog", a "## Bug fixes" heading, a version that opens a change
//     note ("v0.1.1 replaced …");
//   - a diary's first time ("Hit my first hard limit today");
//   - hedges: "maybe", "perhaps", "might be", "not sure", "sounds like",
//     "most likely", "probably", "à priori";
//   - a greeting that opens the text ("Salut, …", "Hi, …"): a person
//     writing to a person, not a program's error;
//   - a maintainer's courtesy: "sorry for the late reply", "does that
//     help?", "hope this helps";
//   - release notes: "are no longer treated as …", "misclassified";
//   - a status report on the work: "is now fully functional after fixing
//     8 bugs";
//   - plural error talk: "these 429 errors", "rate limits happen when";
//   - explanations: "the 401 means …", "a 503 from the gateway means",
//     "typically … means", "the docs say";
//   - a reply that opens by addressing someone ("@matmicro That's a …");
//   - code talk: "catch RateLimitError", "prefer RateLimitError", "the SDK raises NotFoundError",
//     "returns ErrQuota", "is now retried", "if err == …", a handler that
//     "maps" a code;
//   - questions to people: "could you …?", "has anyone …", "why does …?",
//     "should we …?" — not an agent's tip ("Did you set OPENAI_API_KEY?");
//   - a diagnosis given to someone: "this has nothing to do with the
//     code", "the error message here is quite clear", "429 is because the
//     usage exceeds …";
//   - a report of what happened, told: "…, causing 401 Unauthorized on
//     all requests", "the endpoint returns 500 for many accounts", "this
//     happened to me because …", "increasing the limit fixed it";
//   - a question in Chinese, its particle before a comma or a question
//     mark ("这不已经提示余额不足了吗，…").
//   - an explanation in other languages: 关键是 …, 很多时候 …, 不是 … 而是
//     …, a misjudgement (误判), a hedge ("seems to be", 好像是, 似乎是),
//     "not a bug" at the end (不是 … bug), advice to the reader (你…试试),
//     "this is X's reply" (这是…的回复), "has nothing to do with" (和…没关系), a
//     change that no longer returns (不再返回), a field report (实测：…),
//     "ou seja", "es decir"; a Chinese change
//     list ("- 新增 …", "- 修复 …");
//   - a maintainer's verdict and reasoning: "Not a bug. It is because …",
//     an opening definition ("Connection refused means that …"), a
//     policy for hypothetical cases ("In high load scenarios … we prefer
//     to error out"), a narrative of a past run ("During the live smoke,
//     the model returned …").
var discourseRe = lazyRegexp(`(?i)` +
	`\bhas nothing to do with\b|\bthe error(?: message)?(?: here)? is (?:quite |pretty |very |fairly )?(?:clear|self-explanatory|explicit)\b|\b(?:this|that|it) (?:also )?happened (?:to me|for me|to us)\b|\b(?:that|this|which|it) (?:fixed|solved|resolved) it\b|\b(?:increasing|raising|changing|setting|switching|upgrading) [^.\n]{1,40}? (?:fixed|solved|resolved) (?:it|the (?:issue|problem))\b|(?:吗|呢)\s*[？?，,]|` +
	`,\s+caus(?:ing|ed)\b[^.\n]{0,20}?\b[1-5]\d\d\b|\breturns? (?:an? |the )?(?:http )?[1-5]\d\d\b[^.\n]{0,60}?\bfor (?:many|some|all|most|several|certain) (?:\w+ )?(?:accounts|users|customers|people|requests|models)\b|\A\W*(?:the |a |an |this |that )?[1-5]\d\d(?: errors?)? (?:is|was|happens|occurs) because\b|` +
	`\A\W*(?:I'm|I am|I've been) (?:seeing|getting|hitting|experiencing|running into)\b|\A\W*(?:we're|we are|we've been) (?:seeing|getting|hitting|running into)\b` +
	`|\A\W*(?:after|since) (?:upgrading|updating|switching|installing|moving|migrating)\b|\banyone else\b` +
	`|\A\W*(?:fix|feat|chore|docs|refactor|perf|test|build|ci|style|revert)(?:\([^)\n]{0,40}\))?!?:\s` +
	`|\A\W*v?\d+\.\d+(?:\.\d+)?(?:-[\w.]+)? (?:replaced|replaces|adds|added|fixes|fixed|removed|removes|changed|changes|introduced|introduces|now|switched|moved|dropped)\b|\bmy first\b[^.\n]{0,40}?\b(?:today|yesterday|this (?:morning|week))\b` +
	`|\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?)\s+#\d+|\A\W*(?:changelog|release notes?|what's changed)\b|\A\s*#{1,6}\s*(?:bug ?fixes|changes|changelog|release notes|fixed|improvements)\b` +
	`|\b(?:maybe|perhaps|possibly|I wonder|not sure|sounds like|it might be|might be that|could be that|could also be|most likely|probably|it seems that)\b` +
	`|关键是|很多时候|不是[^\n，。]{1,30}?而是|误判|误报|(?:和|与|跟)[^\n，。]{1,20}?(?:没(?:有)?关系|无关)|(?:好像|似乎|貌似|看起来|估计|应该)是|(?:你|您)[^\n。]{0,30}?试试|这是[^\n。]{0,30}?的(?:回复|返回)|不是[^\n。]{0,30}?(?i:bug|问题)[。.]?\s*\z|不再(?:返回|报错|重试|抛出)|\A\W*实测[（(：:]|\A\W*(?:salut|bonjour|hola|hallo|hey|hello|hi)\b\s*[,!]|\b(?:à|a) priori\b|\bou seja\b|\bes decir\b|\bc'est-à-dire\b|\bdas heißt\b|(?m:^\s*[-*]\s*(?:新增|修复|优化|移除|调整))` +
	`|\bsorry for the (?:delay(?:ed response)?|late (?:reply|response))\b|\b(?:does|did) (?:that|this) help\b|\bhope (?:this|that) helps\b` +
	`|\b(?:are|is) no longer (?:\w+ )?(?:misclassified|classified|treated|reported|retried|shown|mapped|counted)\b|\bmisclassif(?:ied|ication|y)\b` +
	`|\b(?:these|those|such|frequent|occasional|intermittent)\s+(?:[\w'"\x60-]+\s+){0,2}?(?:errors|exceptions|failures|timeouts|responses)\b` +
	`|\b(?:rate limits|errors|timeouts|failures|\d{3}s|\dxx(?: errors)?) (?:happen|occur|appear|show up|are (?:returned|thrown|raised))\b` +
	`|\b(?:a|an|the|this|that)\s+\d{3}\b[^.\n]{0,40}?\b(?:means|indicates|signals|is returned when)\b` +
	`|\b(?:typically|usually|generally|normally)\b[^.\n]{0,60}?\bmeans\b|\b(?:the )?docs? (?:say|says|said|state|states|mention)\b` +
	`|\b(?:the|a|an) [\x60'"][^\x60'"\n]{1,40}[\x60'"] (?:[\w-]+ ){0,3}(?:indicates|means|is returned|is raised|happens)\b` +
	`|\b(?:catch|catches|catching|except|prefer|prefers|fall back to|falls back to)\s+\x60?[A-Z]\w*(?:Error|Exception)\b|\A\W*@[\w-]{2,39}\b[ ,:]|\b(?:raises?|throws?|returns?)\s+\x60?(?-i:[A-Z]\w*(?:Error|Exception)|Err[A-Z]\w*)\b` +
	`|\bis now (?:retried|handled|treated|surfaced|mapped|caught)\b|\bis now (?:fully |finally )?(?:functional|working|operational)\b|\bafter fixing (?:\d+|the|a|two|three|several|some) (?:bugs?|issues?)\b|\bif err(?:or)? ?(?:==|!=)|\berrors\.Is\(` +
	`|\b(?:handler|middleware|router|function|method|wrapper|the SDK|the client)\b[^.\n]{0,20}?\b(?:maps?|converts?|treats?|catches?)\b` +
	`|\b(?:could|can|would|will) (?:you|someone|anyone|somebody)\b[^?\n]{0,160}\?|\b(?:has|have|does|is) (?:anyone|someone|anybody)\b` +
	`|\A\W*(?:this is |it'?s |that'?s )?not a bug\b|\A\W*(?:this|that|it)(?: is|'s) (?:the )?expected(?: behaviou?r)?\b|\bclosing (?:this|as)\b|\baccording to (?:this|the docs|the documentation|their docs)\b|\bthe error is (?:linked|related|due) to\b|\bwill be returned (?:if|when)\b|\bfrom (?:\w+(?:'s|’s) )?docs\b|\bsupports? (?:the )?[1-5]\d\d for\b|\bfor (?:\w+ ){0,2}updates, (?:please )?visit\b|\bhandles this\b|\bcurrently does(?:n'?t| not)\b|\A\W*["'\x60]?[\w'\x60" -]{2,40}?["'\x60]? means (?:that|the|your|you|it)\b` +
	`|\bin (?:high[- ]load|heavy[- ]load|peak|overload(?:ed)?|such|these|those|rare|some|certain) (?:scenarios|cases|situations|conditions)\b|\bwe prefer to\b` +
	`|\A\W*during (?:the |a |our |my |this )?(?:[#\w-]+ ){0,4}?(?:smoke|tests?|run|session|rollout|deploy(?:ment)?|migration|benchmark|canary|eval(?:uation)?)\b[^\n]{0,10},` +
	`|\A\W*(?:why|how|what) (?:does|do|did|is|are|can|should|would)\b[^\n]{0,200}\?|\b(?:should|shall|do) we\b[^?\n]{0,160}\?|\bdo you have\b[^?\n]{0,80}\?|\bare you (?:behind|using|on|running)\b[^?\n]{0,120}\?`)

// proseDiscourse reports whether the evidence is prose, not error-shaped,
// that reads as discourse: it keeps even a signature that reads only
// words (an SDK class name, "We raise ContextWindowExceededError …")
// from it. It is computed once per view.
func (v *view) proseDiscourse() bool {
	if !v.discourseOK {
		v.discourseOK = true
		v.discourseOn = v.prose() && (v.docLayout() || !v.errorShaped() && v.discourse())
	}
	return v.discourseOn
}

// docLayoutRe marks reference text by its layout, whatever words it
// holds (prose sources only, error-shaped or not: a help page's
// "Error: … Cause: … Solution: …" opens with an error head):
//
//   - a Markdown table row of two or more cells ("| 402 | … | … |"), or
//     one printed without its outer pipes (pipeRow);
//   - a cause (or description) heading followed by a remedy heading, each opening a line
//     or set in bold ("Cause: … Solution: …", "**原因**：… **解决方法**：");
//   - a numbered or bare Chinese cause heading (原因二：) with a hedge
//     after it (可能 may, 默认 by default, 通常 usually): a reference's
//     explanation, not a report.
//   - a Markdown list item whose bold head is a code or term and a colon
//     ("1. **1113 (…)**: …", "- **429**: …"): a definition, as a row is;
//   - a reference entry "<status> - <type_name> : <description>" whose
//     description has a modal (can, may, können, pueden): an error
//     reference, not an SDK's "Error code: 429 - {…}" (no type name, a
//     brace);
//   - a cause and a remedy heading inline on one line, in any of the
//     corpora's languages ("Causa: … Solución: …", "Ursache: … Lösung:",
//     原因：… 解决方法：).
//
// A provider's hint ("Possible cause: …", 请确认 …) is one heading at
// most, and a provider's body is JSON: neither is a layout.
var docLayoutRe = lazyRegexp(`(?i)` +
	`(?:\A|\n)[ \t]*\|[^|\n]+\|[^|\n]+\|` +
	`|(?:\A|\n)[ \t*]*(?:(?:possible )?causes?|description)\**[ \t]*:[\s\S]{0,600}?\n[ \t*]*(?:solutions?|resolution|how to fix|fix)\**[ \t]*:` +
	`|(?:\A|\n|\*\*)[ \t]*原因[一二三四五六七八九十\d]*\**[ \t]*[:：][\s\S]{0,600}?(?:解决方案|解决方法|解决办法)\**[ \t]*[:：]` +
	`|(?:\A|\n)[ \t]*原因[一二三四五六七八九十\d]*[ \t]*[:：][\s\S]{0,600}?(?:可能|默认|通常)` +
	`|(?:\A|\n)[ \t]*(?:\d{1,2}[.)]|[-*+])[ \t]+\*\*[^*\n]{1,80}\*\*[ \t]*[:：]` +
	`|(?:\A|\n)[ \t]*[1-5]\d\d[ \t]+-[ \t]+[a-z][a-z0-9_]{2,40}[ \t]+:[ \t]+[^\s{\[][\s\S]{0,400}?\b(?:can|may|might|could|können|kann|pueden|puede|podem|pode|peuvent|peut)\b` +
	`|\b(?:causes?|causa|ursache|raison|motivo)[ \t]*[:：][^\n]{1,400}?\b(?:solutions?|solución|solucion|solução|solucao|lösung|abhilfe|remedy|resolution)[ \t]*[:：]` +
	`|(?:原因|원인)[ \t]*[:：][^\n]{1,400}?(?:解决方法|解决方案|解决办法|対処法|対策|解決策|解決方法|해결 ?방법|해결책)[ \t]*[:：]`)

// docLayout reports whether the message or stderr text of prose
// evidence (a message chunk, stderr) is laid out as reference text
// (docLayoutRe). A JSON-RPC error and structured data are never read
// for it.
func (v *view) docLayout() bool {
	if !v.prose() {
		return false
	}
	// The layout is in the lines as printed: the message before unwrap
	// joins them.
	msg := headBytes(v.ev.Message, MaxScanBytes)
	return docLayoutRe().MatchString(msg) || docLayoutRe().MatchString(v.text(FieldStderr)) || pipeRow(msg)
}

// pipeRow reports whether some line of t is a table row printed without
// its outer pipes: three or more cells split by " | ", or two and a
// trailing " |" ("503 | Overloaded | Try again later.", "code | 含义 |").
// A log line's columns ("2026-01-02 10:00:00 | ERROR | …") are not a row:
// a cell that is a log level or opens with a date or a clock time keeps
// the line a report.
func pipeRow(t string) bool {
	for _, line := range strings.Split(t, "\n") {
		line = strings.TrimSpace(line)
		trailing := strings.HasSuffix(line, " |")
		cells := strings.Split(strings.TrimSuffix(line, " |"), " | ")
		if len(cells) < 2 || len(cells) < 3 && !trailing {
			continue
		}
		row := true
		for _, c := range cells {
			c = strings.TrimSpace(c)
			if c == "" || logColumnRe().MatchString(c) {
				row = false
				break
			}
		}
		if row {
			return true
		}
	}
	return false
}

var logColumnRe = lazyRegexp(`(?i)\A(?:trace|debug|info|notice|warn|warning|error|err|fatal|critical|crit|panic)\z|\A\[?\d{4}-\d\d-\d\d|\A\[?\d\d:\d\d(?::\d\d)?`)

func (v *view) discourse() bool {
	for _, f := range []string{FieldMessage, FieldData, FieldStderr} {
		if t := v.text(f); t != "" && discourseRe().MatchString(t) {
			return true
		}
	}
	return false
}

// mentionQuote reports whether the span [i, j) of t stands in quotes amid
// other words ("the 'connection reset' error", "Users reported \"invalid
// api key\" after …"): a mention. A quote after ':', '=', ',', '{', '[',
// '(' or after a status ("403 Forbidden \"…\"") is the report's own.
func mentionQuote(t string, i, j int) bool {
	if in, mention := scriptQuote(t, i, j); in {
		return mention
	}
	if j-i > 2 && strings.ContainsAny(t[i:i+1], "'\"\x60") && t[j-1] == t[i] {
		i, j = i+1, j-1 // the match holds its own quotes ("\"overloaded\"")
	}
	if strings.ContainsAny(t[i:j], "'\"\x60\u201c\u201d\n") {
		return false
	}
	open := strings.LastIndexAny(t[:i], "'\"\x60\u201c\n")
	if open < 0 || t[open] == '\n' {
		return false
	}
	q, closeQ := t[open:open+1], t[open:open+1]
	if strings.HasPrefix(t[open:], "\u201c") {
		q, closeQ = "\u201c", "\u201d"
	} else if strings.Count(t[:open], q)%2 != 0 {
		return false // the quote before the match closes an earlier one
	}
	k := strings.Index(t[j:], closeQ)
	if k < 0 || strings.Contains(t[j:j+k], "\n") {
		return false
	}
	if q == "'" && open > 0 && isWordByte(t[open-1]) {
		return false // an apostrophe ("isn't"), not a quote
	}
	before := strings.TrimRight(t[:open], " \t")
	if before == "" {
		return false // the text opens with the quote
	}
	switch before[len(before)-1] {
	case ':', '=', ',', '{', '[', '(':
		return false
	}
	if statusBeforeRe().MatchString(before) || errorClassBeforeRe().MatchString(before) {
		return false
	}
	return isWordByte(before[len(before)-1])
}

// errorClassBeforeRe is an exception's class name right before a quote
// ("ChatError “…”", "APIStatusError '…'"), or a log line's error level
// ("ERROR \"…\"", "[app] FATAL '…'", a line that opens "Error \"…\""): the
// quote is that error's own message, as after a colon, not words named by
// prose.
var errorClassBeforeRe = lazyRegexp(`\b[A-Z][A-Za-z0-9]*(?:Error|Exception)\z|(?-i:\b(?:ERROR|ERR|FATAL|CRITICAL))\z|(?m:^\W*Error\z)`)

// scriptQuotes pairs the quote marks of other scripts and languages with
// their closing marks: German „…“ and ‚…‘, French and Swiss «…» and ‹…›,
// Japanese and Chinese 「…」 and 『…』.
var scriptQuotes = []struct{ open, close, close2 string }{
	{"\u201e", "\u201c", "\u201d"}, // „…“ (or ”)
	{"\u201a", "\u2018", "\u2019"}, // ‚…‘ (or ’)
	{"\u00ab", "\u00bb", "\u00bb"}, // «…»
	{"\u2039", "\u203a", "\u203a"}, // ‹…›
	{"\u300c", "\u300d", "\u300d"}, // 「…」
	{"\u300e", "\u300f", "\u300f"}, // 『…』
}

// scriptQuote reports whether the span [i, j) of t stands inside one of
// scriptQuotes on one line (in) and, if so, whether that is a mention: the
// quote follows a word in any script ("Ein „Internal Server Error“ ist
// …"), or its closing mark is followed by the word for an error
// (「Access denied」エラー, „…“-Fehler), which names the error rather than
// reports it. A quote after ':' or '=' is the report's own.
func scriptQuote(t string, i, j int) (in, mention bool) {
	line := strings.LastIndexByte(t[:i], '\n') + 1
	for _, q := range scriptQuotes {
		open := strings.LastIndex(t[line:i], q.open)
		if open < 0 {
			continue
		}
		open += line
		if strings.Contains(t[open+len(q.open):i], q.close) || strings.Contains(t[open+len(q.open):i], q.close2) {
			continue // closed before the match
		}
		end := len(t)
		if k := strings.IndexByte(t[j:], '\n'); k >= 0 {
			end = j + k
		}
		rest := t[j:end]
		k := strings.Index(rest, q.close)
		if k2 := strings.Index(rest, q.close2); k2 >= 0 && (k < 0 || k2 < k) {
			k = k2
		}
		if k < 0 {
			continue
		}
		after := strings.TrimLeft(rest[k:], q.close+q.close2)
		if errorNounRe().MatchString(after) {
			return true, true
		}
		before := strings.TrimRight(t[line:open], " \t")
		if before == "" {
			return true, false
		}
		r, _ := utf8.DecodeLastRuneInString(before)
		return true, unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	return false, false
}

// errorNounRe is the word for an error right after a closing quote, in the
// corpora's languages.
var errorNounRe = lazyRegexp(`(?i)\A[\s-]*(?:エラー|错误|錯誤|报错|報錯|오류|에러|fehler|error|erreur|errore)`)

var statusBeforeRe = lazyRegexp(`(?i)\b[1-5]\d\d(?:\s+[A-Z][\w ]{0,30})?\z`)

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// quotedOnly reports whether every match of re in t stands in a mention
// quote (mentionQuote).
func quotedOnly(t string, re *regexp.Regexp) bool {
	locs := re.FindAllStringIndex(t, 8)
	if len(locs) == 0 || len(locs) == 8 {
		return false
	}
	for _, l := range locs {
		if !mentionQuote(t, l[0], l[1]) {
			return false
		}
	}
	return true
}

func (v *view) quoted() bool {
	for _, f := range []string{FieldMessage, FieldData, FieldStderr} {
		if t := v.text(f); t != "" && (quotedRe().MatchString(t) || otherServiceRe().MatchString(t) || toolOwnRe().MatchString(t)) {
			return true
		}
	}
	return false
}

func (v *view) narrative() bool {
	for _, f := range []string{FieldMessage, FieldData, FieldStderr} {
		if t := v.text(f); t != "" && mentionRe().MatchString(t) {
			return true
		}
	}
	return false
}

// errorShaped reports whether the evidence carries the shape of an error
// report: a status, a provider error body, or a leading error head.
func (v *view) errorShaped() bool {
	if !v.shapedOK {
		v.shapedOK, v.shaped = true, v.computeErrorShaped()
	}
	return v.shaped
}

func (v *view) computeErrorShaped() bool {
	if st := v.status(); st.code != 0 && !st.fromWords() {
		return true // a status in the words ("when it returns 503 …") is not a shape
	}
	for _, obj := range v.objectNodes() {
		if _, ok := obj["error"]; ok {
			return true
		}
		if _, ok := obj["errors"]; ok {
			return true
		}
		if _, ok := obj["error_code"]; ok {
			return true
		}
		if t, ok := obj["type"].(string); ok && strings.HasSuffix(strings.ToLower(t), "error") {
			return true
		}
		if errorBody(obj) {
			return true
		}
	}
	for _, f := range []string{FieldMessage, FieldData, FieldStderr} {
		for _, line := range strings.Split(v.text(f), "\n") {
			// A JSON-RPC error's generic message may lead the report
			// ("Internal error: API Error: …").
			if i := strings.Index(line, ": "); i > 0 && genericRPCMessage(line[:i]) {
				line = line[i+2:]
			}
			if m := commentedHeadRe().FindStringSubmatch(line); m != nil {
				line = m[1]
			}
			if _, ok := ParseErrorLine(line); ok || toolErrorHeadRe().MatchString(line) {
				return true
			}
			if wrappedErrorHead(line) {
				return true
			}
		}
	}
	return false
}

// wrapperLabelRe is a wrapper's label before its colon: one to three
// words of letters, digits and a program's punctuation, not a sentence's
// opening ("The error **APIStatusError**: …" is prose).
var wrapperLabelRe = lazyRegexp(`\A[\p{L}\p{N}_\[\]()./-]+(?: [\p{L}\p{N}_\[\]()./-]+){0,2}\z`)

var articleRe = lazyRegexp(`\A(?i:the|a|an|this|that|my|our|your|its)\b`)

// wrappedErrorHead reports whether line is an error line behind a
// wrapper's own short labels ("agent: turn 3: provider call:
// OllamaEndpointNotFoundError: …", "请求失败：Error: …"): at most three
// labels of a few words, no sentence among them, then an error head.
func wrappedErrorHead(line string) bool {
	rest := line
	for range 3 {
		i := strings.Index(rest, ": ")
		w := 2
		if j := strings.Index(rest, "："); j >= 0 && (i < 0 || j < i) {
			i, w = j, len("：")
		}
		if i <= 0 || i > 40 || !wrapperLabelRe().MatchString(rest[:i]) || articleRe().MatchString(rest[:i]) {
			return false
		}
		rest = strings.TrimLeft(rest[i+w:], " ")
		if _, ok := ParseErrorLine(rest); ok {
			return true
		}
	}
	return false
}

// commentedHeadRe is an error line a plugin writes into a buffer behind
// a comment marker, with an upper-case error head ("// API ERROR: Invalid
// URL …", an editor plugin's chat buffer): the head in capitals is the
// plugin's report, where a code comment writes prose ("// handle the
// error"). Only such a head lifts the comment guard.
var commentedHeadRe = lazyRegexp(`\A\s*(?://|#|--|;+)\s*((?:[A-Z][A-Z0-9_]* )?(?:ERROR|FATAL|EXCEPTION|FAILED)\s*:\s*\S.*)\z`)

// toolErrorHeadRe is a command-line client's numbered error head, the
// tool's name and its exit code in brackets ("curl: (92) …"): the line
// is the tool's report, whatever words follow ("treated as error").
var toolErrorHeadRe = lazyRegexp(`\A\s*[a-z][\w.-]{1,20}: \(\d{1,3}\) \S`)

// errorBody reports whether obj is shaped like an error body: a message
// ("message", "msg") beside a code, status, AWS __type or a validation
// location ("loc").
func errorBody(obj map[string]any) bool {
	_, m1 := obj["message"]
	_, m2 := obj["msg"]
	if !m1 && !m2 {
		return false
	}
	for _, k := range []string{"code", "status", "__type", "loc"} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

// fromWords reports whether the status was read from the words of the
// text (or a name standing for one) rather than carried as a status.
func (s derivedStatus) fromWords() bool {
	return s.origin == StatusFromText || s.origin == StatusFromName
}

// textOnly reports whether r reads only words, whatever its tier: a
// regex without a status, field, prefix or JSON-RPC code condition. Such a
// rule is kept from prose discourse (proseDiscourse).
func (r *compiledRule) textOnly() bool {
	return r.re != nil && r.httpSet == nil && len(r.fields) == 0 && r.prefix == nil && r.Match.RPCCode == nil
}

// wordsOnly reports whether r is a textOnly rule of the phrase and status
// tiers. Such a rule is kept from prose that mentions a failure
// (mentionOnly).
func (r *compiledRule) wordsOnly() bool {
	return r.textOnly() && r.Tier >= TierPhrase
}
