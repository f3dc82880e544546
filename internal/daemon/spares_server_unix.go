//go:build unix

package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
)

// ioTimeout bounds reading a request, writing an answer, and (for a
// bridge without a deadline of its own) a whole request.
const ioTimeout = 10 * time.Second

// ServeSpares is the spares server's whole life (see the package doc):
// `acpbridge __spares SOCK TTL`. It returns the exit status.
func ServeSpares(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: acpbridge "+SparesCommand+" SOCKET TTL")
		return 2
	}
	ttl, err := time.ParseDuration(args[1])
	if err != nil || ttl <= 0 {
		fmt.Fprintf(os.Stderr, "acpbridge spares: bad time to live %q\n", args[1])
		return 2
	}
	os.Remove(args[0]) // a stale socket; the keeper holds the directory
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: args[0], Net: "unix"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge spares: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	superviseSpares()
	newSpareServer(ttl).run(ctx, ln)
	return 0
}

// superviseSpares runs every spare under acpbridge's supervisor (Linux;
// see proc.Supervise), as a bridge runs its agents: stopping a lent
// process then stops whatever it started too, even in a session of its
// own (claude's Bash tool).
func superviseSpares() {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge spares: spares run unsupervised: can't find acpbridge's executable: %v\n", err)
		return
	}
	proc.SuperviseWith([]string{self, proc.SuperviseCommand})
}

// spareServer lends the spares of its pool to the bridges that connect.
type spareServer struct {
	pool *pool[*proc.Process]
}

func newSpareServer(ttl time.Duration) *spareServer {
	return &spareServer{pool: newPool(ttl, startSpare)}
}

// startSpare starts a spare, and says so if it can't.
func startSpare(s proc.Spec) (*proc.Process, error) {
	p, err := proc.Start(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge spares: %v\n", err)
	}
	return p, err
}

// run serves the connections to ln until ctx is done (or ln fails), then
// closes them, stops the spares nobody took, and waits for both.
func (s *spareServer) run(ctx context.Context, ln *net.UnixListener) {
	ctx, cancel := context.WithCancel(ctx)
	defer closeOnDone(ctx, ln)()
	var conns sync.WaitGroup
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			break
		}
		conns.Go(func() { s.serve(ctx, conn) })
	}
	cancel()
	s.pool.close()
	conns.Wait()
}

// serve answers one bridge's request; it closes conn when ctx is done.
func (s *spareServer) serve(ctx context.Context, conn *net.UnixConn) {
	defer conn.Close()
	defer closeOnDone(ctx, conn)()
	ask, err := readAsk(conn)
	if err != nil {
		writeAnswer(conn, spareAnswer{Error: fmt.Sprintf("reading the request: %v", err)}, nil)
		return
	}
	if ask.Op == "warm" {
		err := s.pool.warm(ask.spec())
		writeAnswer(conn, spareAnswer{Error: errText(err)}, nil)
		return
	}
	p, ok := s.pool.take(ask.spec().Kind())
	if !ok {
		writeAnswer(conn, spareAnswer{None: true}, nil)
		s.refill(ctx, ask.spec())
		return
	}
	s.lend(ctx, conn, p, ask)
}

// The server starts the next spare of a kind not at once after a take,
// beside the agent the bridge has just taken (or started itself, when
// there was none) and is starting its first turn on, which would then
// share the CPU with a second agent's start-up (most of a second of CPU
// for Claude Code): once the one lent has settled (used no CPU for
// refillQuiet: started, its first turn likely done), at most refillMax
// after the take; refillDelay after a take that found none.
const (
	refillDelay = time.Second
	refillQuiet = 300 * time.Millisecond
	refillMax   = 10 * time.Second
)

// refill starts the next spare of s's kind, refillDelay from now (unless
// the server stops first).
func (sv *spareServer) refill(ctx context.Context, s proc.Spec) {
	t := time.NewTimer(refillDelay)
	defer t.Stop()
	select {
	case <-t.C:
		sv.pool.warm(s)
	case <-ctx.Done():
	}
}

// readAsk reads a bridge's request, within ioTimeout.
func readAsk(conn *net.UnixConn) (spareAsk, error) {
	var ask spareAsk
	conn.SetReadDeadline(time.Now().Add(ioTimeout))
	defer conn.SetReadDeadline(time.Time{})
	line, err := bufio.NewReaderSize(io.LimitReader(conn, 1<<20), 4096).ReadBytes('\n')
	if err != nil {
		return ask, err
	}
	if err := json.Unmarshal(line, &ask); err != nil {
		return ask, err
	}
	if ask.Op != "warm" && ask.Op != "take" {
		return ask, fmt.Errorf("unknown op %q", ask.Op)
	}
	return ask, nil
}

// lend hands p to the bridge on conn, starts the next spare of its kind
// (refillDelay later, or when p exits if that comes first), and tells the
// bridge when p exits (unless the server stops first: ctx). p lives no
// longer than the bridge's end of conn: see endWithBridge.
func (s *spareServer) lend(ctx context.Context, conn *net.UnixConn, p *proc.Process, ask spareAsk) {
	files := p.Lend()
	err := writeAnswer(conn, spareAnswer{Pid: p.Pid()}, files)
	closeAll(files) // the bridge's now, or nobody's
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge spares: lending %s (pid %d): %v\n", ask.Path, p.Pid(), err)
		p.Stop()
		s.pool.warm(ask.spec())
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer conn.Close() // ends endWithBridge's read
	wg.Go(func() { endWithBridge(conn, p) })
	if !s.refillOnceSettled(ctx, p, ask.spec()) {
		return
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		return
	}
	status := errText(p.ExitStatus())
	writeAnswer(conn, spareAnswer{Exit: &status}, nil)
}

// endWithBridge stops p (Process.Terminate, its supervisor taking what p
// started with it) if the bridge's end of conn closes before p has
// exited: the bridge let it go without stopping it, or died, even by
// SIGKILL, which closes its descriptors all the same. p's stdin does not
// tell: claude does not exit at its stdin's end while a turn runs. The
// bridge sends nothing once it has been lent p, so any read's end is the
// connection's; endWithBridge returns at that end, or conn's close.
func endWithBridge(conn *net.UnixConn, p *proc.Process) {
	conn.SetReadDeadline(time.Time{})
	io.Copy(io.Discard, conn)
	select {
	case <-p.Done():
	default:
		p.Terminate()
	}
}

// refillOnceSettled starts the next spare like lent once lent has settled,
// or exited; false if the server stops first (ctx).
func (s *spareServer) refillOnceSettled(ctx context.Context, lent *proc.Process, like proc.Spec) bool {
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, below, which ends Settle
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	settled := make(chan struct{})
	wg.Go(func() {
		defer close(settled)
		proc.Settle(ctx, lent.Pid(), refillQuiet, refillMax)
	})
	select {
	case <-settled:
	case <-lent.Done():
	case <-ctx.Done():
		return false
	}
	s.pool.warm(like)
	return true
}

// writeAnswer writes a as a JSON line, with files (SCM_RIGHTS) if any.
func writeAnswer(conn *net.UnixConn, a spareAnswer, files []*os.File) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encoding the answer: %w", err)
	}
	oob, err := rights(files)
	if err != nil {
		return err
	}
	conn.SetWriteDeadline(time.Now().Add(ioTimeout))
	_, _, err = conn.WriteMsgUnix(append(b, '\n'), oob, nil)
	return err
}

// rights is the control message that passes files, or nil for none.
func rights(files []*os.File) ([]byte, error) {
	if len(files) == 0 {
		return nil, nil
	}
	fds := make([]int, 0, len(files))
	for _, f := range files {
		fd, err := rawFd(f)
		if err != nil {
			return nil, err
		}
		fds = append(fds, fd)
	}
	return syscall.UnixRights(fds...), nil
}

// rawFd is f's descriptor, left as it is (File.Fd would make it blocking,
// and it is shared with whoever receives it).
func rawFd(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd int
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return 0, err
	}
	return fd, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// closeOnDone closes c once ctx is done, until the function it returns is
// called; that function returns once a close begun has ended.
func closeOnDone(ctx context.Context, c io.Closer) (stop func()) {
	closed := make(chan struct{})
	stopClose := context.AfterFunc(ctx, func() {
		defer close(closed)
		c.Close()
	})
	return func() {
		if !stopClose() {
			<-closed
		}
	}
}
