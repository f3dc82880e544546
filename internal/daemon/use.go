package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// Use is a bridge's use of something a daemon's server holds for its
// clients, such as OpenCode's instance of one directory: a shared lock
// on a file of the daemon's directory, which the system lets go if the
// bridge dies. The bridge that leaves it last may release the thing
// (Leave, then Done), while the bridges that come to use it meanwhile
// wait (Use).
type Use struct{ lock *flock.Flock }

// usesDir is where a daemon's directory keeps the files of Uses. A
// server's start removes it (clean), with the things it named.
const usesDir = "uses"

// TakeUse takes a use of what name names, in the daemon's directory dir,
// waiting while a bridge that left it last releases it.
func TakeUse(ctx context.Context, dir, name string) (*Use, error) {
	sum := sha256.Sum256([]byte(name))
	path := filepath.Join(dir, usesDir, hex.EncodeToString(sum[:12]))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("making the daemon's uses directory: %w", err)
	}
	lock := flock.New(path)
	ok, err := lock.TryRLockContext(ctx, 20*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("taking a use of %s: %w", name, err)
	}
	if !ok {
		return nil, fmt.Errorf("taking a use of %s: %w", name, ctx.Err())
	}
	return &Use{lock: lock}, nil
}

// Leave lets the use go and reports whether no other bridge uses it.
// Then the caller holds it alone, other bridges waiting in TakeUse, until
// it calls Done.
func (u *Use) Leave() (last bool) {
	u.lock.Unlock()
	last, err := u.lock.TryLock()
	return err == nil && last
}

// Done ends the hold that Leave gave the last user.
func (u *Use) Done() { u.lock.Unlock() }
