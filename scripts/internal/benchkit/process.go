package benchkit

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
)

// Dirs are the directories of one run, in a fresh temporary directory
// Root: the agent's HOME, its working directory and acpbridge's state
// directory.
type Dirs struct {
	Root  string
	Home  string // Root/home
	Cwd   string // Root/project
	State string // Root/state, for the "STATE" of an argv
}

// MakeDirs makes the Dirs of a run, with the directories inHome (relative
// paths) in Home, under a new temporary directory named after pattern (as
// os.MkdirTemp). The function it returns removes them all, unless keep:
// then MakeDirs only says on w where they are, after label.
func MakeDirs(w io.Writer, pattern, label string, keep bool, inHome ...string) (Dirs, func(), error) {
	root, err := os.MkdirTemp("", pattern)
	if err != nil {
		return Dirs{}, nil, err
	}
	cleanup := func() { os.RemoveAll(root) }
	if keep {
		fmt.Fprintf(w, "%s: temporary directory %s\n", label, root)
		cleanup = func() {}
	}
	d := Dirs{Root: root, Home: filepath.Join(root, "home"), Cwd: filepath.Join(root, "project"), State: filepath.Join(root, "state")}
	mk := []string{d.Home, d.Cwd, d.State}
	for _, h := range inHome {
		mk = append(mk, filepath.Join(d.Home, h))
	}
	for _, dir := range mk {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			cleanup()
			return Dirs{}, nil, err
		}
	}
	return d, cleanup, nil
}

// DaemonsOfTheRun, in an agent's environment, has acpbridge keep its
// daemons in a directory of the run's own (Dirs.Daemons), stopped at the
// run's end: the daemons of acpbridge-cold, which every run starts.
var DaemonsOfTheRun = daemon.RootEnv + "=DAEMONS"

// Daemons is where the run's own daemons are (DaemonsOfTheRun).
func (d Dirs) Daemons() string { return filepath.Join(d.Root, "daemons") }

// Process is an agent process under test, started by Dirs.Start.
type Process struct {
	Stdin   io.WriteCloser
	Stdout  io.ReadCloser
	Started time.Time // when it was started

	pid        int
	proc       *os.Process
	daemons    string // the run's own daemons (DaemonsOfTheRun), stopped with it
	stderrPath string
	stderr     *os.File
	exited     chan struct{} // closed when Wait returns
	smp        *sampler
	seen       []ProcID // by Stop
}

// Start starts argv, with each "STATE" in it replaced by d.State, in
// d.Cwd with the environment env, in a process group of its own, and a
// sampler on its process tree that counts the processes running the
// executable match. Its stdin and stdout are pipes, its stderr the file
// stderr.log in d.Root: a file, not a pipe, so that waiting for it does
// not wait for children that inherit it.
func (d Dirs) Start(argv, env []string, match string) (*Process, error) {
	argv = slices.Clone(argv)
	for i, s := range argv {
		if s == "STATE" {
			argv[i] = d.State
		}
	}
	env = slices.Clone(env)
	for i, kv := range env {
		if kv == DaemonsOfTheRun {
			env[i] = daemon.RootEnv + "=" + d.Daemons()
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = d.Cwd
	cmd.Env = env
	var err error
	if cmd.SysProcAttr, err = groupAttr(); err != nil {
		return nil, err
	}
	p := &Process{stderrPath: filepath.Join(d.Root, "stderr.log"), daemons: d.Daemons(), exited: make(chan struct{})}
	if p.Stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.Stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if p.stderr, err = os.Create(p.stderrPath); err != nil {
		return nil, err
	}
	cmd.Stderr = p.stderr
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		p.stderr.Close()
		return nil, err
	}
	p.pid, p.proc = cmd.Process.Pid, cmd.Process
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	p.smp = startSampler(p.pid, match)
	return p, nil
}

// Stop takes a last sample, closes the agent's stdin and gives it grace
// to exit; then it SIGKILLs every process group seen in its tree and gives
// what is left of the tree grace again to go. It returns whether the agent
// exited by itself within the first grace.
func (p *Process) Stop(grace time.Duration) (exited bool) {
	p.smp.stop()
	p.Stdin.Close()
	exited = p.wait(grace)
	p.seen = p.smp.seenProcs()
	killAll(p.pid, p.seen)
	p.wait(grace)
	// Its children may take a moment to go after SIGKILL.
	deadline := time.Now().Add(grace)
	for len(alive(p.seen)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	p.stderr.Close()
	daemon.StopAll(p.daemons)
	return exited
}

// Signal sends sig to the agent process (a server that does not stop when
// its stdin closes, SIGTERM), and waits at most grace for it to exit; it
// says whether it did. Stop then ends what is left of its tree.
func (p *Process) Signal(sig os.Signal, grace time.Duration) (exited bool) {
	if err := p.proc.Signal(sig); err != nil {
		return false
	}
	return p.wait(grace)
}

// wait waits at most d for the agent to exit, and says whether it did.
func (p *Process) wait(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// Record puts into res, after Stop, what the run came to: the peaks of
// the agent's process tree, the processes seen in it and, if the run
// failed, the agent's stderr. With verbose it also prints the processes
// and the agent's stderr on w, under label.
func (p *Process) Record(res *Result, w io.Writer, label string, verbose bool) {
	res.Peaks = p.smp.result()
	res.Seen = p.seen
	if verbose {
		fmt.Fprintf(w, "  %s process tree:\n%s", label, p.smp.lives())
	}
	b, err := os.ReadFile(p.stderrPath)
	if err != nil {
		return
	}
	if res.Err != nil {
		res.Stderr = string(b)
	}
	if verbose && len(b) > 0 {
		fmt.Fprintf(w, "[%s stderr]\n%s\n", label, indent(strings.TrimRight(string(b), "\n"), "  "))
	}
}

// Shared is what every run of an agent that keeps a daemon (acpbridge
// --shared) has in common, as a user's bridges do: one HOME, one project
// (Cwd), and the directory of its daemons (for $ACPBRIDGE_DAEMONS).
type Shared struct {
	Root, Home, Cwd, Daemons string
}

// NewShared makes a Shared under a new temporary directory named after
// pattern (as os.MkdirTemp), with the directories inHome in its HOME.
func NewShared(pattern string, inHome ...string) (*Shared, error) {
	root, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, err
	}
	s := &Shared{Root: root, Home: filepath.Join(root, "home"), Cwd: filepath.Join(root, "project"), Daemons: filepath.Join(root, "daemons")}
	for _, d := range append([]string{s.Home, s.Cwd, s.Daemons}, inHome...) {
		if !filepath.IsAbs(d) {
			d = filepath.Join(s.Home, d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			os.RemoveAll(root)
			return nil, err
		}
	}
	return s, nil
}

// Env is what tells acpbridge where the daemons are.
func (s *Shared) Env() string { return daemon.RootEnv + "=" + s.Daemons }

// PrintDaemons prints what each daemon that runs holds, as the runs left
// it: idle, kept for the next bridge.
func (s *Shared) PrintDaemons(w io.Writer) {
	if s == nil {
		return
	}
	for _, r := range daemon.List(s.Daemons) {
		fmt.Fprintf(w, "daemon %s, idle after the runs (keeper, server and what runs under it): RSS %.1f MiB, PSS %.1f MiB\n",
			r.Name, MiB(r.Memory.RSS>>10), MiB(r.Memory.PSS>>10))
	}
}

// Settle waits until the daemons that run have settled (used no CPU for a
// second: the last run's spare gone, the next one started), for at most
// 10 s each: a bridge of a user rarely comes within seconds of the last.
func (s *Shared) Settle() {
	if s == nil {
		return
	}
	for _, r := range daemon.List(s.Daemons) {
		proc.Settle(context.Background(), r.Keeper, time.Second, 10*time.Second)
	}
}

// Close stops the daemons and removes everything; a nil s has nothing to
// close.
func (s *Shared) Close() {
	if s == nil {
		return
	}
	daemon.StopAll(s.Daemons)
	os.RemoveAll(s.Root)
}
