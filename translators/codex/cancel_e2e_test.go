package codex

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/coder/acp-go-sdk"
)

// Cancelling a turn stops the command it runs: the tool call ends failed
// and the command's process is gone.
func TestE2E_cancelStopsTheCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: finding a cancelled turn's commands needs Linux's /proc")
	}
	e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	setMode(t, e, id, "full-access")
	secs := strconv.Itoa(5000 + os.Getpid()%1000) // a sleep no one else runs
	done := make(chan acp.PromptResponse, 1)
	go func() {
		r, _ := e.Prompt(id, "run: sleep "+secs)
		done <- r
	}()
	e.WaitFor(func(u acp.SessionUpdate) bool { return u.ToolCall != nil || u.ToolCallUpdate != nil })
	deadline := time.Now().Add(time.Minute)
	for len(sleeping(secs)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.CS.Cancel(e.Ctx(), acp.CancelNotification{SessionId: id})
	select {
	case r := <-done:
		if r.StopReason != acp.StopReasonCancelled {
			t.Errorf("stop reason %q", r.StopReason)
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled turn did not end")
	}
	deadline = time.Now().Add(time.Minute)
	for len(sleeping(secs)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled turn's command still runs: %v", sleeping(secs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sleeping lists the pids of live "sleep secs" processes.
func sleeping(secs string) []string {
	ents, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range ents {
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmd), "sleep\x00"+secs) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		pids = append(pids, e.Name())
	}
	return pids
}
