//go:build !linux

package proc

import (
	"context"
	"time"
)

// Descendants is not known here.
func (p *Process) Descendants() []int { return nil }

// Descendants is not known here.
func Descendants(int) []int { return nil }

// Cwd is not known here.
func Cwd(int) string { return "" }

// groupLive is not known here: no group is waited for.
func groupLive(int) bool { return false }

// KillTree does nothing here.
func KillTree(int) {}

// MemoryOf is not known here.
func MemoryOf(int) (Memory, bool) { return Memory{}, false }

// TreeMemory is not known here.
func TreeMemory(int) Memory { return Memory{} }

// TreeCPU is not known here.
func TreeCPU(int) time.Duration { return 0 }

// Settle can't tell here: it waits for quiet (at most within, while ctx
// lasts).
func Settle(ctx context.Context, _ int, quiet, within time.Duration) bool {
	t := time.NewTimer(min(quiet, within))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}
