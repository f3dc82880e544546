package daemon_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/daemontest"
)

// TestMain lets the test binary keep the daemons its tests start, and play
// a child process when FAKE_CHILD is set: "listen" serves its pid on a
// socket "sock" in its directory (a daemon's server), "echo" (a spare)
// echoes its stdin's lines and exits with the status a line "exit N" says,
// "tool" (a spare too) plays an agent running a tool (tool), "bridge"
// takes a "tool" spare and waits to be killed (bridge).
func TestMain(m *testing.M) {
	daemontest.KeepFromHere()
	switch os.Getenv("FAKE_CHILD") {
	case "listen":
		listen()
	case "echo":
		echo()
	case "tool", "bridge":
		lentChild(os.Getenv("FAKE_CHILD"))
	}
	os.Exit(m.Run())
}

// listen is the "listen" child: a daemon's server that answers every
// connection on ./sock with its pid; with FAKE_DIE set, it dies at start.
func listen() {
	l, err := net.Listen("unix", "sock")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	if os.Getenv("FAKE_DIE") != "" {
		fmt.Fprintln(os.Stderr, "dying at start on purpose")
		os.Exit(4)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		fmt.Fprintln(c, os.Getpid())
		c.Close()
	}
}

// echo is the "echo" child: a spare that says it started (stderr), notes
// its pid in $SPARE_PIDS, echoes lines and exits as "exit N" says.
func echo() {
	fmt.Fprintln(os.Stderr, "echo started")
	os.WriteFile(filepath.Join(os.Getenv("SPARE_PIDS"), strconv.Itoa(os.Getpid())), nil, 0o600)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if n, ok := strings.CutPrefix(in.Text(), "exit "); ok {
			code, _ := strconv.Atoi(n)
			fmt.Fprintln(os.Stderr, "echo exiting")
			os.Exit(code)
		}
		fmt.Println(in.Text())
	}
	os.Exit(0)
}
