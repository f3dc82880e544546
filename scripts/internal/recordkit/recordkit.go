// Package recordkit holds what scripts/record's agents (claude, codex)
// share: rewriting the temporary paths of a recording
// into the neutral ones the reference captures use, a locked writer for a
// log shared with a child's stderr, and small output helpers.
package recordkit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Rule rewrites each of From into To.
type Rule struct {
	From []string
	To   string
}

// Rewriter replaces temporary paths by the recorded ones.
type Rewriter struct{ r *strings.Replacer }

// NewRewriter rewrites by rules, longest path first, so that a directory
// inside another (a cwd inside its home) is matched before it.
func NewRewriter(rules ...Rule) Rewriter {
	type pair struct{ from, to string }
	var pairs []pair
	for _, r := range rules {
		for _, from := range r.From {
			if from != "" && from != r.To {
				pairs = append(pairs, pair{from, r.To})
			}
		}
	}
	// strings.NewReplacer tries the old strings in argument order at each
	// position.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].from) > len(pairs[j].from) })
	var old []string
	for _, p := range pairs {
		old = append(old, p.from, p.to)
	}
	return Rewriter{strings.NewReplacer(old...)}
}

// Rewrite rewrites s.
func (rw Rewriter) Rewrite(s string) string { return rw.r.Replace(s) }

// Spellings is path and, if different, path with symlinks resolved.
func Spellings(path string) []string {
	out := []string{path}
	if r, err := filepath.EvalSymlinks(path); err == nil && r != path {
		out = append(out, r)
	}
	return out
}

// WriteJSON writes v, indented and rewritten, to path.
func WriteJSON(path string, v any, rw Rewriter) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(rw.Rewrite(string(b))+"\n"), 0o644)
}

// QuoteAll quotes the arguments a shell would split or misread, for a log
// line that can be pasted back.
func QuoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'{}") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}
