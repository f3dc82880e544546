package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary play a child process when FAKE_CHILD is
// set: "stubborn" ignores SIGTERM, "loud" writes a lot to stderr then
// fails, "burst" writes a lot to stdout and exits at once, "eof" exits when
// its stdin closes.
func TestMain(m *testing.M) {
	switch os.Getenv("FAKE_CHILD") {
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, "refusing to die")
		time.Sleep(time.Hour)
	case "loud":
		for i := range 1000 {
			fmt.Fprintf(os.Stderr, "line %d of noise\n", i)
		}
		fmt.Fprintln(os.Stderr, "the real reason")
		os.Exit(3)
	case "burst":
		for i := range 3000 { // less than a pipe buffer: the test reads only after the exit
			fmt.Printf("line %d\n", i)
		}
		os.Exit(0)
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		os.Exit(0)
	case "leaves-a-writer":
		// A child in the group that ends on SIGTERM, slowly, writing a
		// file as it goes (as an adapter's agent writes its session); the
		// leader exits at the end of its stdin.
		// It holds none of the leader's pipes: it says it is ready on a
		// pipe of its own.
		sh := exec.Command("/bin/sh", "-c", `trap 'sleep 0.3; echo ended > "$WRITER_FILE"; exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
		out, err := sh.StdoutPipe()
		if err != nil || sh.Start() != nil {
			os.Exit(2)
		}
		bufio.NewReader(out).ReadString('\n')
		fmt.Fprintln(os.Stderr, "ready")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "eof":
		fmt.Fprintln(os.Stderr, "reading stdin")
		buf := make([]byte, 1)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				os.Exit(0)
			}
		}
	}
	os.Exit(m.Run())
}

func start(t *testing.T, role string) *Process {
	t.Helper()
	p, err := Start(Spec{Path: os.Args[0], Env: append(os.Environ(), "FAKE_CHILD="+role, "GORACE=atexit_sleep_ms=0")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

// Closing stdin was enough: the child exited by itself, status 0, not by
// the SIGTERM that Stop sends Grace later. It is waited for first, so that
// a slow start on a loaded machine does not count against it.
func TestStop_closesStdinFirst(t *testing.T) {
	p := start(t, "eof")
	waitStderr(t, p, "reading stdin")
	p.Stop()
	if err := p.Err(); err != nil {
		t.Errorf("exit: %v; want status 0, stdin closed being enough", err)
	}
}

// WaitGroupGone waits for what the process left in its group: a child
// that ends on Stop's SIGTERM, writing a file as it ends, has written it
// once the group is gone.
func TestWaitGroupGone_waitsForTheGroupsLastWriter(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: the process group is known on Linux only")
	}
	file := filepath.Join(t.TempDir(), "ended")
	p, err := Start(Spec{Path: os.Args[0], Env: append(os.Environ(), "FAKE_CHILD=leaves-a-writer", "WRITER_FILE="+file, "GORACE=atexit_sleep_ms=0")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	waitStderr(t, p, "ready")
	p.Stop()
	if !p.WaitGroupGone(time.Minute) {
		t.Fatal("the group's child still runs")
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "ended\n" {
		t.Errorf("the child's last write: %q, %v; want it done once the group is gone", b, err)
	}
}

// waitStderr waits until the child has written want to its stderr.
func waitStderr(t *testing.T, p *Process, want string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(p.Stderr(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the child never wrote %q", want)
		}
	}
}

func TestStop_killsAChildThatIgnoresSIGTERM(t *testing.T) {
	p := start(t, "stubborn")
	waitStderr(t, p, "refusing to die") // it says so once it ignores SIGTERM
	done := make(chan struct{})
	go func() { p.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("still running")
	}
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "killed") || !strings.Contains(err.Error(), "refusing to die") {
		t.Errorf("Err() = %v; want killed, with the stderr tail", err)
	}
}

func TestErr_carriesABoundedStderrTail(t *testing.T) {
	p := start(t, "loud")
	err := p.Err()
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "the real reason") {
		t.Fatalf("Err() = %v", err)
	}
	if n := len(p.Stderr()); n > 16<<10 {
		t.Errorf("stderr tail is %d bytes, want at most 16 KiB", n)
	}
}

func TestLookPath_namesTheOverride(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("ACPBRIDGE_FAKE", "")
	if _, err := LookPath("nonesuch", "ACPBRIDGE_FAKE"); err == nil || !strings.Contains(err.Error(), "ACPBRIDGE_FAKE") {
		t.Errorf("err %v; want it to name the override variable", err)
	}
	t.Setenv("ACPBRIDGE_FAKE", os.Args[0])
	if p, err := LookPath("nonesuch", "ACPBRIDGE_FAKE"); err != nil || p != os.Args[0] {
		t.Errorf("override: %q, %v", p, err)
	}
}

// The child's last lines are still there to read after it exited, however
// late the reader comes.
func TestStdout_readableAfterExit(t *testing.T) {
	p := start(t, "burst")
	<-p.Done()
	data, err := io.ReadAll(p.Stdout)
	if err != nil {
		t.Fatalf("reading after exit: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3000 || lines[len(lines)-1] != "line 2999" {
		t.Errorf("read %d lines after exit, the last %q; want all 3000", len(lines), lines[len(lines)-1])
	}
}

// A child gets no acpbridge secret, whether its Spec has an environment
// or inherits the bridge's.
func TestStart_withoutSecrets(t *testing.T) {
	t.Setenv("ACPBRIDGE_TOKEN", "the-token")
	t.Setenv("FAKE_CHILD", "env")
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	for name, env := range map[string][]string{"inherited": nil, "given": append(os.Environ(), "acpbridge_token=lower")} {
		p, err := Start(Spec{Path: os.Args[0], Env: env})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Kill()
		<-p.Done()
		data, err := io.ReadAll(p.Stdout)
		if err != nil {
			t.Fatal(err)
		}
		out := string(data)
		if !strings.Contains(out, "FAKE_CHILD=env") || strings.Contains(strings.ToUpper(out), "ACPBRIDGE_TOKEN=") {
			t.Errorf("the %s environment a child got:\n%s\nwant FAKE_CHILD and no ACPBRIDGE_TOKEN", name, out)
		}
	}
}
