package testproc

import (
	"io"
	"os"
	"os/exec"
	"testing"
)

// TestMain lets the test binary stand in for a child that waits for its
// stdin to close.
func TestMain(m *testing.M) {
	if os.Getenv("TESTPROC_CHILD") == "1" {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestKillGroup_killsTheChild(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TESTPROC_CHILD=1")
	cmd.SysProcAttr = GroupAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Alive(pid) {
		t.Errorf("Alive(%d) = false for a running child", pid)
	}
	if err := KillGroup(pid); err != nil {
		t.Errorf("KillGroup: %v", err)
	}
	if err := cmd.Wait(); err == nil {
		t.Errorf("the child exited cleanly; want killed")
	}
	if Alive(pid) {
		t.Errorf("Alive(%d) = true after the child was killed and reaped", pid)
	}
	if err := KillGroup(pid); err != nil {
		t.Errorf("KillGroup of a group that is gone: %v", err)
	}
	if err := Kill(pid); err != nil {
		t.Errorf("Kill of a process that is gone: %v", err)
	}
}
