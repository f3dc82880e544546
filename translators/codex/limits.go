package codex

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// nearLimit is the share of a rate limit window used (in percent) from
// which the client is told the limit is near.
const nearLimit = 90

// rateLimitsDoc is account/rateLimits/updated's, as app-server 0.169.0's
// schema has it (generate-json-schema): the account's limits, for no
// thread in particular.
type rateLimitsDoc struct {
	RateLimits struct {
		LimitName            *string      `json:"limitName"`
		Primary              *limitWindow `json:"primary"`
		Secondary            *limitWindow `json:"secondary"`
		RateLimitReachedType *string      `json:"rateLimitReachedType"`
	} `json:"rateLimits"`
}

type limitWindow struct {
	UsedPercent        int    `json:"usedPercent"`
	WindowDurationMins *int64 `json:"windowDurationMins"`
	ResetsAt           *int64 `json:"resetsAt"` // Unix seconds
}

// limitNotice is the notice of a rate limit codex says is reached (an
// error) or near (a warning), with when it resets where codex says; ok
// is false when neither. key names what it tells, so that it is told
// once.
func limitNotice(raw json.RawMessage) (u acp.SessionUpdate, key string, ok bool) {
	var d rateLimitsDoc
	if json.Unmarshal(raw, &d) != nil {
		return u, "", false
	}
	rl := d.RateLimits
	name := "Codex's rate limit"
	if rl.LimitName != nil && *rl.LimitName != "" {
		name = "Codex's " + *rl.LimitName + " limit"
	}
	w := fullest(rl.Primary, rl.Secondary)
	switch {
	case rl.RateLimitReachedType != nil && *rl.RateLimitReachedType != "":
		what := strings.ReplaceAll(*rl.RateLimitReachedType, "_", " ")
		return agentkit.Notice(acp.NoticeSeverityError, name+" is reached", what+resets(w)), "reached " + what + resets(w), true
	case w != nil && w.UsedPercent >= nearLimit:
		used := fmt.Sprintf("%d%% used", w.UsedPercent)
		return agentkit.Notice(acp.NoticeSeverityWarning, name+" is near", used+resets(w)), "near" + resets(w), true
	}
	return u, "", false
}

// fullest is the window of the two that is used the most, nil for none.
func fullest(a, b *limitWindow) *limitWindow {
	if a == nil || b != nil && b.UsedPercent > a.UsedPercent {
		return b
	}
	return a
}

// resets says when window w resets, "" if codex does not say.
func resets(w *limitWindow) string {
	if w == nil || w.ResetsAt == nil {
		return ""
	}
	return "; resets at " + time.Unix(*w.ResetsAt, 0).UTC().Format("2006-01-02 15:04 UTC")
}

// limitNotices tells each session once that the account's limit is near
// or reached: codex repeats the same limits after every model request.
type limitNotices struct {
	mu   sync.Mutex
	said string
}

// notice is the notice to tell for raw, if it says something new.
func (l *limitNotices) notice(raw json.RawMessage) (acp.SessionUpdate, bool) {
	u, key, ok := limitNotice(raw)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !ok {
		l.said = ""
		return u, false
	}
	if key == l.said {
		return u, false
	}
	l.said = key
	return u, true
}
