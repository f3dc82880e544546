package bridge

import (
	"testing"

	"github.com/coder/acp-go-sdk"
)

// TestEarlier: what a file held before an edit, from what the router kept
// when the call was announced and, when that was too late, from the diff.
func TestEarlier(t *testing.T) {
	old := func(s string) *string { return &s }
	file := func(s string) *snapshot { return &snapshot{content: s, exists: true} }
	for _, tc := range []struct {
		name          string
		before, after *snapshot
		diff          acp.Diff
		want          *snapshot
	}{
		{"kept in time", file("a"), file("b"), acp.Diff{}, file("a")},
		{"a new file kept in time", &snapshot{}, file("b"), acp.Diff{}, &snapshot{}},
		{"unreadable then", nil, file("b"), acp.Diff{Path: "/f", OldText: old("a"), NewText: "b"}, nil},
		{"kept too late, rebuilt from the diff", file("x b y"), file("x b y"), acp.Diff{Path: "/f", OldText: old("a"), NewText: "b"}, file("x a y")},
		{"kept too late, a new file", file("b"), file("b"), acp.Diff{Path: "/f", NewText: "b"}, &snapshot{}},
		{"kept too late, the diff's text twice", file("b b"), file("b b"), acp.Diff{Path: "/f", OldText: old("a"), NewText: "b"}, nil},
		{"kept too late, no diff", file("b"), file("b"), acp.Diff{}, nil},
		{"no change", file("a"), file("a"), acp.Diff{Path: "/f", OldText: old("a"), NewText: "a"}, nil},
		{"kept while replaced, rebuilt from the diff", &snapshot{}, file("x b"), acp.Diff{Path: "/f", OldText: old("a"), NewText: "b"}, file("x a")},
		{"kept while replaced, the diff can't say", &snapshot{}, file("b b"), acp.Diff{Path: "/f", OldText: old("a"), NewText: "b"}, &snapshot{}},
		{"kept mid-write, rebuilt from the diff", file(""), file("x b"), acp.Diff{Path: "/f", OldText: old("a"), NewText: "b"}, file("x a")},
		{"kept in time, the diff without old text", file("a"), file("b"), acp.Diff{Path: "/f", NewText: "b"}, file("a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := earlier(tc.before, tc.after, tc.diff)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("earlier = %+v, want %+v", got, tc.want)
			}
		})
	}
}
