package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Supervision: an agent's tools may start processes of their own process
// group or session (claude's Bash tool does), which neither the group
// signals nor the kernel's parent-death signal reach: when the bridge is
// SIGKILLed, they used to live on. So, on Linux, the bridge can start
// every agent through a supervisor, acpbridge itself run as
//
//	acpbridge __supervise AGENT ARGS...
//
// The supervisor is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever
// its agent starts and leaves behind becomes its child. It runs the agent
// on its own stdin/stdout/stderr, in its own process group; it takes
// SIGTERM (its parent-death signal too: the bridge died) as the order to
// stop, and once the agent has exited, or it was told to stop, it kills
// every process left under it and exits with the agent's status.

// SuperviseCommand is the acpbridge subcommand that supervises an agent.
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

const prSetChildSubreaper = 36

// Supervise is the supervisor's whole life (see above); it returns the
// exit status.
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
	var werr error
wait:
	for {
		select {
		case werr = <-exited:
			break wait
		case sig := <-sigs:
			if sig != syscall.SIGTERM {
				continue // the group's signal reached the agent itself (amp's cancel is a SIGINT)
			}
			// A stop from the bridge, or its death: the agent goes, or is
			// made to.
			cmd.Process.Signal(sig)
			select {
			case werr = <-exited:
			case <-time.After(Grace):
				cmd.Process.Kill()
				werr = <-exited
			}
			break wait
		}
	}
	killOrphans()
	return status(werr)
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
	deadline := time.Now().Add(Grace)
	for time.Now().Before(deadline) {
		kids := children(self)
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
				syscall.Kill(-pid, syscall.SIGKILL) // its group: what it started there too
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// children lists the processes whose parent is pid.
func children(pid int) []int { return parents()[pid] }

// parents maps each process to its children, from /proc.
func parents() map[int][]int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[0] != "Z" {
			if ppid, err := strconv.Atoi(fields[1]); err == nil {
				kids[ppid] = append(kids[ppid], p)
			}
		}
	}
	return kids
}

// Descendants lists the live processes under the process (its children,
// theirs, …), for finding what an agent started.
func (p *Process) Descendants() []int { return Descendants(p.Pid()) }

// Descendants lists the live processes under pid.
func Descendants(pid int) []int {
	kids := parents()
	var out []int
	next := []int{pid}
	for len(next) > 0 {
		pid := next[0]
		next = next[1:]
		for _, k := range kids[pid] {
			out = append(out, k)
			next = append(next, k)
		}
	}
	return out
}

// Cwd is a process's working directory, or "" if it can't be read.
func Cwd(pid int) string {
	dir, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	return dir
}

// KillTree sends SIGKILL to pid and, if it leads a process group, to its
// group.
func KillTree(pid int) {
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// superviseAttr lets a supervisor hear of the bridge's death as SIGTERM,
// which it can act on, rather than be killed outright.
func superviseAttr(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
