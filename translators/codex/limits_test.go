package codex

import (
	"encoding/json"
	"strings"
	"testing"
)

// The account's rate limits are told when near or reached, once each,
// with when they reset; a limit error is told as an error notice beside
// the turn's error.
func TestLimits_notices(t *testing.T) {
	var l limitNotices
	for _, c := range []struct{ raw, want string }{
		{`{"rateLimits":{"limitId":"codex","primary":null,"secondary":null}}`, ""},
		{`{"rateLimits":{"primary":{"usedPercent":40,"resetsAt":1800000000}}}`, ""},
		{`{"rateLimits":{"primary":{"usedPercent":40},"secondary":{"usedPercent":93,"resetsAt":1800000000}}}`,
			`"description":"93% used; resets at 2027-01-15 08:00 UTC","sessionUpdate":"notice","severity":"warning","title":"Codex's rate limit is near"`},
		{`{"rateLimits":{"primary":{"usedPercent":40},"secondary":{"usedPercent":94,"resetsAt":1800000000}}}`, ""}, // said already
		{`{"rateLimits":{"limitName":"weekly","rateLimitReachedType":"rate_limit_reached","primary":{"usedPercent":100,"resetsAt":1800000000}}}`,
			`"description":"rate limit reached; resets at 2027-01-15 08:00 UTC","sessionUpdate":"notice","severity":"error","title":"Codex's weekly limit is reached"`},
		{`not json`, ""},
	} {
		u, ok := l.notice(json.RawMessage(c.raw))
		got, _ := json.Marshal(u)
		if ok != (c.want != "") || ok && !strings.Contains(string(got), c.want) {
			t.Errorf("%s: told %v %s, want %q", c.raw, ok, got, c.want)
		}
	}
	out, err := NewTranslator("/w").Translate("error", json.RawMessage(`{"error":{"message":"You've hit your usage limit.","codexErrorInfo":"usageLimitExceeded"},"willRetry":false}`))
	got, _ := json.Marshal(out.Updates)
	if err != nil || out.Err == "" || !strings.Contains(string(got), `"severity":"error","title":"Codex's usage limit is reached"`) {
		t.Errorf("a usage limit error: %+v %s, %v", out, got, err)
	}
	if out, _ := NewTranslator("/w").Translate("error", json.RawMessage(`{"error":{"message":"boom","codexErrorInfo":"internalServerError"}}`)); len(out.Updates) != 0 {
		t.Errorf("another error was told as a notice: %+v", out.Updates)
	}
}
