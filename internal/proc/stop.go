package proc

import (
	"syscall"
	"time"
)

// Stop ends the process: stdin closed, then SIGTERM to its group, then
// SIGKILL, Grace apart. It returns once the process has exited; what it
// left running in its group (children that outlived it) gets SIGTERM.
func (p *Process) Stop() {
	p.stop.Do(func() {
		defer SignalGroup(p.pid, syscall.SIGTERM)
		p.Stdin.Close()
		for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
			if sig != 0 {
				SignalGroup(p.pid, sig)
			}
			if p.exitsWithin(Grace) {
				return
			}
		}
		<-p.done
	})
	<-p.done
}

// exitsWithin reports whether the process exits within d.
func (p *Process) exitsWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// WaitGroupGone waits, for at most d, until no live process is left in
// the process's group, and reports whether none is: what the process
// started in its group and left to end by Stop's SIGTERM (the claude
// under claude-agent-acp) may still be writing its last files as Stop
// returns. Linux only; elsewhere it returns true at once.
func (p *Process) WaitGroupGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for groupLive(p.pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Terminate stops a process that does not exit when its stdin ends (a
// server): SIGTERM to its process group, then the rest of Stop's ladder.
func (p *Process) Terminate() {
	SignalGroup(p.pid, syscall.SIGTERM)
	p.Stop()
}

// Signal sends sig to the process group (SIGINT: what Ctrl-C in a
// terminal does).
func (p *Process) Signal(sig syscall.Signal) error {
	return SignalGroup(p.pid, sig)
}

// Kill sends SIGKILL to the process group at once (tests use it to play a
// crash).
func (p *Process) Kill() error {
	return SignalGroup(p.pid, syscall.SIGKILL)
}
