// Package proc runs an agent CLI as a supervised child process: its own
// process group (so the whole tree goes when it does), killed if the bridge
// dies, stderr kept as a bounded tail for error messages and never mixed
// into the bridge's stdout, and a shutdown ladder of stdin EOF, SIGTERM,
// SIGKILL.
package proc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec says what to run.
type Spec struct {
	Path string
	Args []string
	Dir  string
	Env  []string // nil means the bridge's environment
	// Lend leaves stderr in a pipe nobody reads, so that the process can
	// be handed to another program whole (see Process.Lend).
	Lend bool
}

// Kind is what makes two processes started ahead of need interchangeable:
// the executable, its directory and arguments (the environment is the
// caller's to match).
func (s Spec) Kind() string {
	return strings.Join(append([]string{s.Path, s.Dir}, s.Args...), "\x00")
}

// Process is a running child. Stdin and Stdout are its pipes; the caller
// reads Stdout until EOF (or an error). Everything the child wrote before
// it exited can still be read: the pipe is not closed at its exit, only
// DrainGrace later, in case a grandchild keeps it open.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	stdin, stdout *os.File
	errPipe       *os.File // stderr, if lent (Spec.Lend)
	pid           int
	path          string // what runs (the command may be its supervisor)
	stderr        *Tail
	done          chan struct{} // closed when the process has exited
	status        error         // its exit status (nil for 0); set before done closes
	stop          sync.Once
}

// Grace is how long each step of the shutdown ladder waits.
const Grace = 2 * time.Second

// DrainGrace is how long reads of Stdout may still block once the process
// has exited: long enough for what it wrote last, short enough that a
// grandchild holding the pipe (a tool left running) does not hold up the
// reader. The pipe is closed after twice that.
const DrainGrace = time.Second

// Start starts the process.
func Start(s Spec) (*Process, error) {
	path, args, wrapped := supervised(s.Path, s.Args)
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	cmd.SysProcAttr = ChildAttr()
	if wrapped {
		superviseAttr(cmd.SysProcAttr)
	}
	p := &Process{path: s.Path, stderr: NewTail(16 << 10), done: make(chan struct{})}
	// os/exec's StdoutPipe is closed by Wait as soon as the process exits,
	// which can lose its last lines; these pipes are the Process's to close.
	pipes, err := newPipes(s.Lend)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.Path, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes.child[0], pipes.child[1], p.stderr
	if s.Lend {
		cmd.Stderr = pipes.child[2]
	}
	err = cmd.Start()
	pipes.closeChild()
	if err != nil {
		pipes.closeOurs()
		return nil, fmt.Errorf("starting %s: %w", s.Path, err)
	}
	p.stdin, p.stdout, p.errPipe, p.pid = pipes.ours[0], pipes.ours[1], pipes.ours[2], cmd.Process.Pid
	p.Stdin, p.Stdout = p.stdin, p.stdout
	go p.wait(cmd.Wait)
	return p, nil
}

// Adopt makes a Process of one another program started and lent (see
// Lend): pid, its stdin, stdout and stderr, and exit, which returns its
// exit status once it has exited.
func Adopt(path string, pid int, files []*os.File, exit func() error) *Process {
	p := &Process{path: path, pid: pid, stdin: files[0], stdout: files[1], stderr: NewTail(16 << 10), done: make(chan struct{})}
	p.Stdin, p.Stdout = p.stdin, p.stdout
	copied := make(chan struct{})
	go func() {
		io.Copy(p.stderr, files[2])
		close(copied)
	}()
	go p.wait(func() error {
		status := exit()
		select { // its last words, unless a grandchild holds the pipe
		case <-copied:
		case <-time.After(DrainGrace):
		}
		files[2].Close()
		return status
	})
	return p
}

// pipes are a child's stdin, stdout and (if lent) stderr: the child's
// ends and ours.
type pipes struct{ child, ours [3]*os.File }

func newPipes(stderr bool) (*pipes, error) {
	ps := &pipes{}
	n := 2
	if stderr {
		n = 3
	}
	for i := range n {
		r, w, err := os.Pipe()
		if err != nil {
			ps.closeChild()
			ps.closeOurs()
			return nil, err
		}
		if i == 0 { // stdin: the child reads
			ps.child[i], ps.ours[i] = r, w
		} else {
			ps.child[i], ps.ours[i] = w, r
		}
	}
	return ps, nil
}

func (ps *pipes) closeChild() { closeAll(ps.child[:]) }
func (ps *pipes) closeOurs()  { closeAll(ps.ours[:]) }

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// wait waits for the process to exit (by wait, which returns its status)
// and lets the reader of Stdout drain it.
func (p *Process) wait(wait func() error) {
	p.status = wait()
	close(p.done)
	p.stdout.SetReadDeadline(time.Now().Add(DrainGrace))
	time.AfterFunc(2*DrainGrace, func() { p.stdout.Close() })
}

func (p *Process) name() string { return p.path }

func (p *Process) tail() string {
	if t := strings.TrimSpace(ansi.ReplaceAllString(p.stderr.String(), "")); t != "" {
		return "; stderr: " + t
	}
	return ""
}

// ansi matches terminal colour codes, which CLIs write to stderr even when
// it is not a terminal.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// Pid is the child's process id.
func (p *Process) Pid() int { return p.pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited (nil for status 0), with its stderr
// tail; it waits for Done.
func (p *Process) Err() error {
	<-p.done
	if p.status == nil {
		return nil
	}
	return fmt.Errorf("%s exited: %w%s", p.name(), p.status, p.tail())
}

// Exited describes the exit for an error message: the status and the
// stderr tail, even when the status was 0.
func (p *Process) Exited() error {
	if err := p.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s exited%s", p.name(), p.tail())
}

// ExitStatus is the process's exit status alone (nil for 0), without the
// stderr tail Err adds; it waits for Done.
func (p *Process) ExitStatus() error {
	<-p.done
	return p.status
}

// Lend gives up the process's stdin, stdout and stderr pipes (it must have
// been started with Spec.Lend) for another program to use: the caller
// hands them on and closes them. Done and ExitStatus still tell its exit.
func (p *Process) Lend() []*os.File { return []*os.File{p.stdin, p.stdout, p.errPipe} }

// Stderr returns the tail of what the process wrote to stderr.
func (p *Process) Stderr() string { return p.stderr.String() }

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
			select {
			case <-p.done:
				return
			case <-time.After(Grace):
			}
		}
		<-p.done
	})
	<-p.done
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

// Tail keeps the last bytes written to it.
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTail returns a Tail keeping max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// LookPath finds an agent's executable: the override variable if set (a
// path), else name on PATH.
func LookPath(name, envVar string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		found, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", envVar, p, err)
		}
		return found, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found on PATH (install it, or set %s to its path): %w", name, envVar, err)
	}
	return p, nil
}
