package bridge

import (
	"testing"
	"time"
)

func TestCheckpointDelay_backsOffAsATurnWritesMore(t *testing.T) {
	for _, tc := range []struct {
		written int
		want    time.Duration
	}{
		{0, time.Second},
		{draftBudget - 1, time.Second},
		{draftBudget, 2 * time.Second},
		{3*draftBudget + 7, 8 * time.Second},
		{1 << 40, 1024 * time.Second},
	} {
		if got := checkpointDelay(time.Second, tc.written); got != tc.want {
			t.Errorf("after %d bytes of drafts: wait %v, want %v", tc.written, got, tc.want)
		}
	}
}
