package proc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
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
	// Tag is what else the process depends on, for Kind: a digest of the
	// settings files it reads at its start, say.
	Tag string
}

// Kind is what makes two processes started ahead of need interchangeable:
// the executable, its directory and arguments, and its Tag (the
// environment is the caller's to match). Two Kinds of one Place differ
// only in their Tag.
func (s Spec) Kind() string {
	return s.Place() + "\x01" + s.Tag
}

// Place is a Kind without the Tag: where and how the process runs.
func (s Spec) Place() string {
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

// tailSize is how much of a child's stderr is kept.
const tailSize = 16 << 10

// Start starts the process.
func Start(s Spec) (*Process, error) {
	// os/exec's StdoutPipe is closed by Wait as soon as the process exits,
	// which can lose its last lines; these pipes are the Process's to close.
	pipes, err := newPipes(s.Lend)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.Path, err)
	}
	p := newProcess(s.Path, pipes.ours[:])
	cmd := command(s)
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
	p.pid = cmd.Process.Pid
	contain(p.pid)
	go p.wait(cmd.Wait)
	return p, nil
}

// command is the command that runs s: in a group of its own (a job on
// Windows: contain), under the supervisor if there is one, in s.Env (nil:
// the bridge's) without Secrets.
func command(s Spec) *exec.Cmd {
	path, args, wrapped := supervised(s.Path, s.Args)
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = s.Dir, Scrub(s.Env)
	if cmd.Env == nil {
		cmd.Env = Environ()
	}
	cmd.SysProcAttr = ChildAttr()
	if wrapped {
		superviseAttr(cmd.SysProcAttr)
	}
	return cmd
}

// newProcess is the Process of path on our ends of its pipes: stdin,
// stdout and, if lent, stderr.
func newProcess(path string, ours []*os.File) *Process {
	p := &Process{path: path, stdin: ours[0], stdout: ours[1], errPipe: ours[2],
		stderr: NewTail(tailSize), done: make(chan struct{})}
	p.Stdin, p.Stdout = p.stdin, p.stdout
	return p
}

// Adopt makes a Process of one another program started and lent (see
// Lend): pid, its stdin, stdout and stderr, and exit, which returns its
// exit status once it has exited.
func Adopt(path string, pid int, files []*os.File, exit func() error) *Process {
	p := newProcess(path, []*os.File{files[0], files[1], nil})
	p.pid = pid
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
		files[2].Close() // ends the copy
		<-copied
		return status
	})
	return p
}

// wait waits for the process to exit (by wait, which returns its status)
// and lets the reader of Stdout drain it.
func (p *Process) wait(wait func() error) {
	p.status = wait()
	release(p.pid)
	close(p.done)
	p.stdout.SetReadDeadline(time.Now().Add(DrainGrace))
	time.AfterFunc(2*DrainGrace, func() { p.stdout.Close() })
}

func (p *Process) tail() string {
	if t := strings.TrimSpace(ansi().ReplaceAllString(p.stderr.String(), "")); t != "" {
		return "; stderr: " + t
	}
	return ""
}

// ansi matches terminal colour codes, which CLIs write to stderr even when
// it is not a terminal (compiled at its first use).
var ansi = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`) })

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
	return fmt.Errorf("%s exited: %w%s", p.path, p.status, p.tail())
}

// Exited describes the exit for an error message: the status and the
// stderr tail, even when the status was 0.
func (p *Process) Exited() error {
	if err := p.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s exited%s", p.path, p.tail())
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
