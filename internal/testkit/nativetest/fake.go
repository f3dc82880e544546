package nativetest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Fake is one fake installation of an agent whose CLI is this test
// binary, re-executed: the log its servers append to, the file that
// mirrors their state "on disk" (which every backend made on it shares),
// and the environment that makes a backend run it.
//
// The log is one JSON object a line, {"dir": …, "t_ms": …, "msg": …}; a
// server's first record is a "start", whose msg holds its args and pid,
// and its last an "exit". What the other records say is the agent's.
type Fake struct {
	Log   string
	State string
	Env   []string
}

// FakeVars names the variables that switch a fake on: Play makes the
// test binary play the agent; Log and State name its files.
type FakeVars struct{ Play, Log, State string }

// NewFake makes a fake installation in a new directory, whose races are
// reported as what's (see RaceEnv); env are further switches, a later one
// winning over an earlier.
func NewFake(t *testing.T, what string, vars FakeVars, env ...string) *Fake {
	t.Helper()
	dir := t.TempDir()
	f := &Fake{Log: filepath.Join(dir, "wire.jsonl"), State: filepath.Join(dir, "state.json")}
	f.Env = append([]string{vars.Play + "=1", vars.Log + "=" + f.Log, vars.State + "=" + f.State,
		RaceEnv(t, dir, what)}, env...)
	return f
}

// Installed is an agent's fake installation as RunServerSuite takes it:
// a type that embeds *Fake.
type Installed interface{ Installation() *Fake }

// Installation is f itself.
func (f *Fake) Installation() *Fake { return f }

// Record is one record of a fake's log, as far as every fake's is alike.
type Record struct {
	Dir string `json:"dir"`
	Msg struct {
		Args []string `json:"args"` // a start's
		Pid  int      `json:"pid"`
	} `json:"msg"`
	Raw string `json:"-"` // the line
}

// KeepLine keeps the record's line.
func (r *Record) KeepLine(line string) { r.Raw = line }

// Records reads the log so far: its complete lines, as a server may be
// writing one.
func (f *Fake) Records(t *testing.T) []Record {
	t.Helper()
	return ReadRecords[Record](t, f.Log)
}

// LineKeeper is a log record (a pointer to T) that keeps the line it was
// read from.
type LineKeeper[T any] interface {
	*T
	KeepLine(line string)
}

// ReadRecords is ReadLog's records, each keeping its line.
func ReadRecords[T any, P LineKeeper[T]](t *testing.T, path string) []T {
	t.Helper()
	recs, lines := ReadLog[T](t, path)
	for i := range recs {
		P(&recs[i]).KeepLine(lines[i])
	}
	return recs
}

// Count counts the log records of a direction ("start", "exit", …).
func (f *Fake) Count(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	for _, r := range f.Records(t) {
		if r.Dir == dir {
			n++
		}
	}
	return n
}

// SaveState is the fake's side of Fake.State: it mirrors v, read under
// mu, to the file at path ("": nowhere), replacing the file whole, so
// that a fake started later finds it (LoadState) as the agent finds what
// it keeps on disk.
func SaveState(path string, mu sync.Locker, v any) error {
	if path == "" {
		return nil
	}
	mu.Lock()
	b, err := json.Marshal(v)
	mu.Unlock()
	if err != nil {
		return fmt.Errorf("the fake's state: %w", err)
	}
	tmp := fmt.Sprint(path, ".", os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("the fake's state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("the fake's state: %w", err)
	}
	return nil
}

// LoadState reads into v the state SaveState mirrored to path; it
// reports whether there was one.
func LoadState(path string, v any) bool {
	if path == "" {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(b, v) == nil
}
