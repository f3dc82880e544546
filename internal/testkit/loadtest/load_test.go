// Package loadtest drives one bridge with many sessions at once, on the
// mock and on the real agent CLIs against their fake models.
package loadtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/coder/acp-go-sdk"
)

const sessions = 50

// agentOf is the agent of session i: every tenth claude, every tenth
// codex, the rest the mock.
func agentOf(i int) string {
	switch i % 10 {
	case 0:
		return "claude"
	case 5:
		return "codex"
	}
	return "mock"
}

// Fifty sessions at once on one bridge, mixing the mock with the real
// claude and codex on their fake models, some turns cancelled, then the
// bridge restarts: nothing crosses from one session to another, and every
// acknowledged turn replays.
func TestLoad_mixedAgentsAndARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: the load test does not run with -short")
	}
	w := newWorld(t, false)
	backends := func() []agent.Backend { return append([]agent.Backend{mock.New()}, w.backends()...) }
	state := t.TempDir()
	e := editortest.StartEditorWith(t, backends(), state, bridge.PersistAuto, acp.ClientCapabilities{})
	ids := make([]acp.SessionId, sessions)
	cwds := make([]string, sessions)
	var wg sync.WaitGroup
	errs := make(chan error, 2*sessions)
	for i := range sessions {
		cwds[i] = t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := e.NewSession(cwds[i])
			ids[i] = id
			if agent := agentOf(i); agent != "mock" {
				if _, err := e.SetConfig(id, bridge.ConfigAgent, agent); err != nil {
					errs <- fmt.Errorf("session %d: agent %s: %w", i, agent, err)
					return
				}
			}
			r, err := e.Prompt(id, fmt.Sprintf("hello from session-%02d", i))
			if err != nil || r.StopReason != acp.StopReasonEndTurn {
				errs <- fmt.Errorf("session %d (%s): %+v, %v", i, agentOf(i), r, err)
			}
			if i%7 == 1 { // a slow mock turn, cancelled once it thinks
				go func() {
					for deadline := time.Now().Add(time.Minute); !thinks(e, id) && time.Now().Before(deadline); {
						time.Sleep(10 * time.Millisecond)
					}
					e.CS.Cancel(e.Ctx(), acp.CancelNotification{SessionId: id})
				}()
				if r, err := e.Prompt(id, fmt.Sprintf("slow think read cancel-%02d", i)); err != nil || r.StopReason != acp.StopReasonCancelled {
					errs <- fmt.Errorf("session %d: cancelled turn %+v, %v", i, r, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkOwn(t, "live", ids, func(id acp.SessionId) string { return acptest.Conversation(e.Client.TakeFor(id)) })
	e.Stop()

	e2 := editortest.StartEditorWith(t, backends(), state, bridge.PersistAuto, acp.ClientCapabilities{})
	for i, id := range ids {
		e2.Load(id, cwds[i])
	}
	checkOwn(t, "replayed", ids, func(id acp.SessionId) string { return acptest.Conversation(e2.Client.TakeFor(id)) })
}

// thinks reports whether session id's turn has begun to think (a slow
// mock turn's first update).
func thinks(e *editortest.Editor, id acp.SessionId) bool {
	for _, n := range e.Client.Notifications() {
		if n.SessionId == id && n.Update.AgentThoughtChunk != nil {
			return true
		}
	}
	return false
}

// checkOwn checks that each session's conversation mentions itself and no
// other session.
func checkOwn(t *testing.T, what string, ids []acp.SessionId, conv func(acp.SessionId) string) {
	t.Helper()
	for i, id := range ids {
		got := conv(id)
		for j := range ids {
			mark := fmt.Sprintf("session-%02d", j)
			if strings.Contains(got, mark) != (i == j) {
				t.Errorf("%s session %d (%s) and %s: cross-talk, or its own turn missing:\n%s", what, i, agentOf(i), mark, got)
				break
			}
		}
	}
}
