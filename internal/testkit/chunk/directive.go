package chunk

import "strings"

// MaxEcho is how many runes of a prompt a fake model echoes back.
const MaxEcho = 200

// AfterDirective finds the directive d (such as "run:") in a fake model's
// prompt text and returns the rest of its line, trimmed.
func AfterDirective(text, d string) (string, bool) {
	i := strings.Index(text, d)
	if i < 0 {
		return "", false
	}
	rest, _, _ := strings.Cut(text[i+len(d):], "\n")
	return strings.TrimSpace(rest), true
}

// Echo trims space around s and cuts it to MaxEcho runes, as a fake model
// repeats what it was told.
func Echo(s string) string {
	s = strings.TrimSpace(s)
	n := 0
	for i := range s {
		if n == MaxEcho {
			return s[:i]
		}
		n++
	}
	return s
}
