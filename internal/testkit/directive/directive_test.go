package directive

import (
	"strings"
	"testing"
)

var all = append(append([]Name(nil), lines...), words...)

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Directive // Name "" for none
	}{
		{"Say hello", Directive{}},
		{"please run: ls -la | wc -l  \nand more", Directive{Name: Run, Command: "ls -la | wc -l"}},
		{"run:   \nthink", Directive{Name: Think}}, // a line directive without its argument is not there
		{"write: /tmp/notes.txt hello  big world", Directive{Name: Write, Path: "/tmp/notes.txt", Content: "hello  big world"}},
		{"write: empty.txt", Directive{Name: Write, Path: "empty.txt"}},
		{"edit: a.txt old words => new words", Directive{Name: Edit, Path: "a.txt", Old: "old words", New: "new words"}},
		{"edit: a.txt one", Directive{}}, // no "=>"
		{"read: notes.txt", Directive{Name: Read, Path: "notes.txt"}},
		{"exitplan now", Directive{Name: ExitPlan}},
		{"ask me", Directive{Name: Ask}},
		{"make a todo list", Directive{Name: Todo}},
		{"think about it", Directive{Name: Think}},
		{"slow, please", Directive{Name: Slow}},
		{"fail400", Directive{Name: Fail400}},
		{"fail401", Directive{Name: Fail401}},
		{"please fail500 now", Directive{Name: Fail500}},
		{"fail529.", Directive{Name: Fail529}},
		// Case-sensitive, and words stand alone.
		{"Think about it", Directive{}},
		{"THINK", Directive{}},
		{"RUN: ls", Directive{}},
		{"thinking", Directive{}},
		{"todowrite", Directive{}},
		{"fail5000", Directive{}},
		// The first in the vocabulary's order wins.
		{"think then run: pwd", Directive{Name: Run, Command: "pwd"}},
		{"slow think", Directive{Name: Think}},
		{"todo and ask", Directive{Name: Ask}},
	} {
		got, ok := Find(tc.text, all...)
		if ok != (tc.want.Name != "") || got != tc.want {
			t.Errorf("Find(%q) = %+v, %v; want %+v", tc.text, got, ok, tc.want)
		}
	}
}

// TestFindKnown: a directive a fake does not know is plain text to it,
// and the next one it knows decides.
func TestFindKnown(t *testing.T) {
	if d, ok := Find("read: a.txt", Run, Think); ok {
		t.Errorf("read: for a fake that does not know it: %+v", d)
	}
	if d, ok := Find("read: a.txt, think", Run, Think); !ok || d.Name != Think {
		t.Errorf("read: then think for a fake that knows think: %+v, %v", d, ok)
	}
	if d, ok := Find("run: ls"); ok {
		t.Errorf("a fake that knows nothing: %+v", d)
	}
}

func TestPlain(t *testing.T) {
	if got := Plain("  Say hello \n"); got != "Hello from fake model. You said: Say hello" {
		t.Errorf("Plain: %q", got)
	}
	long := strings.Repeat("é", 300)
	if got := Echo(long); got != strings.Repeat("é", MaxEcho) {
		t.Errorf("Echo cut %d runes, want %d", len([]rune(got)), MaxEcho)
	}
}
