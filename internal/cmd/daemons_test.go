//go:build linux

package cmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
)

// `acpbridge daemons` and doctor list a running daemon with its memory and
// the bridge that uses it, then how long it has been idle; `acpbridge
// daemons stop` stops it.
func TestDaemons_listAndStop(t *testing.T) {
	root := t.TempDir()
	t.Setenv(daemon.RootEnv, root)
	t.Cleanup(func() { daemon.StopAll(root) })
	spec := daemon.Spec{Name: "sleeper", Key: []string{"sleep"}, Path: "/bin/sleep", Args: []string{"600"},
		Env: os.Environ(), Idle: time.Hour, Root: root}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lease, err := daemon.Attend(ctx, spec, func(dir string) error {
		if (&daemon.Lease{Dir: dir}).Pid() == 0 {
			return errors.New("no server yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := runOut(t, 0, "daemons")
	inUse := regexp.MustCompile(`sleeper +keeper \d+, server \d+; RSS [\d.]+ MiB, PSS [\d.]+ MiB; in use by 1 bridge \(pid ` + strconv.Itoa(os.Getpid()) + `\); CPU [\d.]+ s in \d+s \([\d.]+ %\)`)
	if !inUse.MatchString(out) {
		t.Errorf("acpbridge daemons:\n%s\nwant the sleeper in use by this test, with its CPU time", out)
	}
	if want := "at most 6 run at once"; !strings.Contains(out, want) || !strings.Contains(out, "In all: 1 daemon, RSS ") {
		t.Errorf("acpbridge daemons:\n%s\nwant the bound (%q) and the total", out, want)
	}
	if doc := runOut(t, -1, "doctor", "--state-dir", t.TempDir()); !inUse.MatchString(doc) {
		t.Errorf("acpbridge doctor:\n%s\nwant the sleeper listed", doc)
	}
	lease.Close()
	idle := regexp.MustCompile(`sleeper .*; idle \d+s, stops in 59m\d+s; [\d.]+ % of a core idle; CPU [\d.]+ s(.|\n)*In all: 1 daemon, .*; 1 idle, using [\d.]+ % of a core`)
	for deadline := time.Now().Add(time.Minute); !idle.MatchString(out); time.Sleep(100 * time.Millisecond) { // its keeper looks every 5 s
		if time.Now().After(deadline) {
			t.Fatalf("acpbridge daemons once the lease went:\n%s\nwant it idle", out)
		}
		out = runOut(t, 0, "daemons")
	}
	if out := runOut(t, 0, "daemons", "stop"); !strings.Contains(out, "stopped sleeper") {
		t.Errorf("acpbridge daemons stop:\n%s", out)
	}
	if out := runOut(t, 0, "daemons"); !strings.Contains(out, "No shared daemons run") {
		t.Errorf("after stop:\n%s", out)
	}
}

// runOut runs acpbridge with args and returns what it printed; code, if
// not -1, is the exit code it must have.
func runOut(t *testing.T, code int, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if got := run(args, strings.NewReader(""), &out, &out); code >= 0 && got != code {
		t.Errorf("acpbridge %q: exit %d, want %d\n%s", args, got, code, out.String())
	}
	return out.String()
}

// --shared is on by default; the flag, then $ACPBRIDGE_SHARED, say
// otherwise.
func TestSharedTime(t *testing.T) {
	t.Setenv(SharedEnv, "") // restored at the end, unset or not
	for _, tc := range []struct {
		args []string
		env  string // "-": unset
		want time.Duration
	}{
		{nil, "-", DefaultShared},
		{[]string{"--shared=0"}, "-", 0},
		{[]string{"--shared"}, "0", DefaultShared},
		{[]string{"--shared=30m"}, "-", 30 * time.Minute},
		{nil, "0", 0},
		{nil, "off", 0},
		{nil, "on", DefaultShared},
		{nil, "1h", time.Hour},
	} {
		if tc.env == "-" {
			os.Unsetenv(SharedEnv)
		} else {
			t.Setenv(SharedEnv, tc.env)
		}
		fs, o := flags(io.Discard)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		o.sharedAsked = fs.Changed("shared")
		if err := sharedTime(o, slog.New(slog.DiscardHandler)); err != nil || o.shared != tc.want {
			t.Errorf("%q with $%s=%q: %v, %v; want %v", tc.args, SharedEnv, tc.env, o.shared, err, tc.want)
		}
	}
	t.Setenv(SharedEnv, "sometimes")
	if out := runOut(t, 1, "--state-dir", t.TempDir()); !strings.Contains(out, "ACPBRIDGE_SHARED=\"sometimes\": want a duration") {
		t.Errorf("a bad $%s: %s", SharedEnv, out)
	}
}
