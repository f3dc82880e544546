// Package chunk cuts text into pieces for fake model servers to stream:
// on rune boundaries, between words or lines, or between JSON tokens, so
// that a recording can still rewrite a path that was streamed in pieces.
package chunk

import "unicode/utf8"

// Split cuts s into n pieces of about equal length on rune boundaries;
// fewer when s has fewer than n runes (one empty piece for "").
func Split(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	if n > runes {
		n = runes
	}
	if n <= 1 {
		return []string{s}
	}
	pieces := make([]string, 0, n)
	per, extra := runes/n, runes%n
	for i := range n {
		k := per
		if i < extra {
			k++
		}
		j := 0
		for range k {
			_, size := utf8.DecodeRuneInString(s[j:])
			j += size
		}
		pieces = append(pieces, s[:j])
		s = s[j:]
	}
	return pieces
}

// Words cuts text into up to n pieces, each cut just before a space
// (so a word, or a path, is never cut in two), as close to equal lengths
// as the spaces allow; a text without spaces is one piece.
func Words(text string, n int) []string {
	var cuts []int
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' {
			cuts = append(cuts, i)
		}
	}
	return cutAt(text, pick(cuts, len(text), n))
}

// Lines cuts text into up to n pieces, each cut just after a newline.
func Lines(text string, n int) []string {
	var cuts []int
	for i := 0; i < len(text)-1; i++ {
		if text[i] == '\n' {
			cuts = append(cuts, i+1)
		}
	}
	return cutAt(text, pick(cuts, len(text), n))
}

// JSON cuts a JSON text into up to n pieces, each cut just after a
// '{', ':' or ',' outside string literals, so no string value is cut in
// two (recordings can then rewrite paths line by line).
func JSON(js string, n int) []string {
	var cuts []int
	inString, escaped := false, false
	for i := 0; i < len(js)-1; i++ {
		c := js[i]
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == '{' || c == ':' || c == ','):
			cuts = append(cuts, i+1)
		}
	}
	return cutAt(js, pick(cuts, len(js), n))
}

// pick chooses up to n-1 of the increasing positions cands, each the one
// nearest to the next of the equal-length targets.
func pick(cands []int, length, n int) []int {
	var out []int
	for k := 1; k < n && len(cands) > 0; k++ {
		target := length * k / n
		best := 0
		for i, c := range cands {
			if abs(c-target) < abs(cands[best]-target) {
				best = i
			}
		}
		out = append(out, cands[best])
		cands = cands[best+1:]
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// cutAt cuts s at the increasing positions cuts.
func cutAt(s string, cuts []int) []string {
	pieces := make([]string, 0, len(cuts)+1)
	prev := 0
	for _, c := range cuts {
		pieces = append(pieces, s[prev:c])
		prev = c
	}
	return append(pieces, s[prev:])
}

// errorType is the OpenAI error type for an HTTP status.
