//go:build unix

package daemon_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
)

// lentChild plays the child role: "tool" or "bridge".
func lentChild(role string) {
	if role == "tool" {
		tool()
	}
	bridge()
}

// tool is the "tool" child: an agent that, at a line "run", starts a
// command in a session of its own (as claude's Bash tool does) and says
// its pid; it never exits by itself, not even at its stdin's end (as
// claude does not while a turn runs).
func tool() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "run" {
			continue
		}
		cmd := exec.Command("sleep", "3600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "tool:", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
	}
	select {}
}

// bridge is the "bridge" child: it takes a "tool" spare made in
// $SPARE_DIR from the spares server on $SPARES_SOCK, has it run its tool
// unless $BRIDGE_IDLE is set, says "AGENT TOOL" (their pids, TOOL 0 if
// none) and waits to be killed.
func bridge() {
	// The spec as warmed, environment included: the server warms the next
	// spare of a kind from the take that emptied it, and a test binary
	// started without FAKE_CHILD would run every test.
	p := takeOne(proc.Spec{Path: os.Args[0], Dir: os.Getenv("SPARE_DIR"), Env: append(os.Environ(), "FAKE_CHILD=tool")})
	toolPid := "0"
	if os.Getenv("BRIDGE_IDLE") == "" {
		fmt.Fprintln(p.Stdin, "run")
		line, err := bufio.NewReader(p.Stdout).ReadString('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, "bridge: reading the tool's pid:", err)
			os.Exit(1)
		}
		toolPid = strings.TrimSpace(line)
	}
	fmt.Println(p.Pid(), toolPid)
	select {}
}

// takeOne takes a spare made as s, waiting up to 10s for one; it exits if
// there is none.
func takeOne(s proc.Spec) *proc.Process {
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var p *proc.Process
		if p, err = daemon.TakeSpare(context.Background(), os.Getenv("SPARES_SOCK"), s); p != nil {
			return p
		}
	}
	fmt.Fprintln(os.Stderr, "bridge: no spare to take:", err)
	os.Exit(1)
	return nil
}
