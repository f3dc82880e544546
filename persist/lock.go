package persist

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/gofrs/flock"
)

// fileLock is an exclusive advisory lock on a file beside the transcript.
// flock(2) locks belong to the open file, so a second Store in the same
// process is refused too, as a second process would be.
type fileLock struct {
	fl *flock.Flock
}

// lock takes the session's lock without waiting and records our pid in it
// so that whoever is refused can say who holds it.
func (s *Store) lock(id string) (*fileLock, error) {
	path := s.path(id, ".lock")
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking session %s: %w", id, err)
	}
	if !ok {
		pid, _ := os.ReadFile(path)
		return nil, &LockedError{ID: id, PID: string(bytes.TrimSpace(pid))}
	}
	os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	return &fileLock{fl: fl}, nil
}

func (l *fileLock) release() {
	if l != nil {
		l.fl.Close()
	}
}

// withLock runs f holding an exclusive, blocking lock on path.
func withLock(path string, f func() error) error {
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	if err := fl.Lock(); err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	defer fl.Close()
	return f()
}
