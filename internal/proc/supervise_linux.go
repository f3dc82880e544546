package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// SuperviseCommand is the acpbridge subcommand that supervises an agent
// (see the package doc).
const SuperviseCommand = "__supervise"

var (
	superviseMu sync.Mutex
	supervisor  []string // the command line prefix that supervises, or nil
)

// SuperviseWith makes every later Start run its process under the
// supervisor command (acpbridge and SuperviseCommand); nil turns it off.
func SuperviseWith(command []string) {
	superviseMu.Lock()
	defer superviseMu.Unlock()
	supervisor = command
}

// supervised returns the command line that runs path and args, under the
// supervisor if one is set.
func supervised(path string, args []string) (string, []string, bool) {
	superviseMu.Lock()
	defer superviseMu.Unlock()
	if len(supervisor) == 0 {
		return path, args, false
	}
	return supervisor[0], append(append(append([]string{}, supervisor[1:]...), path), args...), true
}

// superviseAttr lets a supervisor hear of the bridge's death as SIGTERM,
// which it can act on, rather than be killed outright.
func superviseAttr(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }

const prSetChildSubreaper = 36

// Supervise is the supervisor's whole life (see the package doc): it runs
// argv and returns the exit status.
func Supervise(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "acpbridge "+SuperviseCommand+": no command to supervise")
		return 2
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "acpbridge supervisor: becoming a subreaper: %v\n", errno)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge supervisor: %v\n", err)
		return 127
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	werr := awaitAgent(cmd.Process, exited, sigs)
	killOrphans()
	return status(werr)
}

// awaitAgent waits for the agent to exit, and makes it at a SIGTERM: the
// bridge stopping it, or dead. It returns the agent's Wait error.
func awaitAgent(agent *os.Process, exited <-chan error, sigs <-chan os.Signal) error {
	for {
		select {
		case err := <-exited:
			return err
		case sig := <-sigs:
			if sig == syscall.SIGTERM {
				return stopAgent(agent, exited)
			}
			// The group's signal reached the agent itself (amp's cancel
			// is a SIGINT).
		}
	}
}

// stopAgent passes SIGTERM on to the agent, and kills it if it has not
// exited within Grace.
func stopAgent(agent *os.Process, exited <-chan error) error {
	agent.Signal(syscall.SIGTERM)
	t := time.NewTimer(Grace)
	defer t.Stop()
	select {
	case err := <-exited:
		return err
	case <-t.C:
		agent.Kill()
		return <-exited
	}
}

// status is the exit status the agent's Wait error stands for.
func status(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return 1
		}
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// killOrphans kills what is left under the supervisor (orphans come to it:
// it is a subreaper) and reaps them, for up to Grace.
func killOrphans() {
	self := os.Getpid()
	for deadline := time.Now().Add(Grace); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		kids := children(self)
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			KillTree(pid) // its group too: what it started there
		}
		reap()
	}
}

// reap collects the exit of every child that has exited.
func reap() {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
