package chunk

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(string, int) []string
		s    string
		n    int
		want []string
	}{
		{"split", Split, "", 3, []string{""}},
		{"split", Split, "ab", 3, []string{"a", "b"}},
		{"split", Split, "abcdefg", 3, []string{"abc", "de", "fg"}},
		{"split", Split, "héllo wörld", 4, []string{"hél", "lo ", "wör", "ld"}},
		{"split", Split, "abc", 1, []string{"abc"}},
		{"words", Words, "", 3, []string{""}},
		{"words", Words, "hello", 3, []string{"hello"}},
		{"words", Words, "one two", 3, []string{"one", " two"}},
		{"words", Words, "Tool finished. Result was: /tmp/recordclaude-1/project/n.txt", 3,
			[]string{"Tool finished. Result", " was:", " /tmp/recordclaude-1/project/n.txt"}},
		{"words", Words, "aaa bbb ccc ddd eee fff", 3, []string{"aaa bbb", " ccc ddd", " eee fff"}},
		{"json", JSON, "{}", 3, []string{"{", "}"}},
		{"json", JSON, `{"a":"b"}`, 3, []string{"{", `"a":`, `"b"}`}},
		{"json", JSON, `{"file_path":"/tmp/x,y:z/a.txt","content":"say \"hi\", then: bye"}`, 3,
			[]string{`{"file_path":`, `"/tmp/x,y:z/a.txt","content":`, `"say \"hi\", then: bye"}`}},
	} {
		got := tc.f(tc.s, tc.n)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s(%q, %d) = %q, want %q", tc.name, tc.s, tc.n, got, tc.want)
		}
		if strings.Join(got, "") != tc.s || len(got) > max(tc.n, 1) {
			t.Errorf("%s(%q, %d) = %q: not a cut of s into at most n pieces", tc.name, tc.s, tc.n, got)
		}
		for _, p := range got {
			if !utf8.ValidString(p) {
				t.Errorf("%s(%q, %d): piece %q is not UTF-8", tc.name, tc.s, tc.n, p)
			}
		}
	}
}
