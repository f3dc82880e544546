package cmd

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// acpbridge --help lists exactly the commands of the table that are not
// hidden, in its order, each with its summary.
func TestUsage_listsTheVisibleCommands(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("acpbridge --help: exit %d; stderr %q", code, stderr.String())
	}
	help := stdout.String()
	var want, got []string
	for _, sub := range commands() {
		switch {
		case sub.hidden:
			if strings.Contains(help, sub.name) {
				t.Errorf("acpbridge --help names the hidden %s:\n%s", sub.name, help)
			}
		case sub.name != "":
			want = append(want, sub.name)
			if !strings.Contains(help, sub.summary) {
				t.Errorf("acpbridge --help lacks %s's summary %q:\n%s", sub.name, sub.summary, help)
			}
		}
	}
	_, lines, _ := strings.Cut(help, "\nUsage: ")
	lines, _, _ = strings.Cut(lines, "\n\n")
	for line := range strings.Lines(lines) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "acpbridge ")
		if word, _, _ := strings.Cut(rest, " "); ok && !strings.HasPrefix(word, "-") && !strings.HasPrefix(word, "[") {
			got = append(got, word)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("acpbridge --help lists the commands %q, want %q (the table's visible ones):\n%s", got, want, help)
	}
}

// Every command, hidden or not, answers --help and -h with its usage,
// and does nothing else.
func TestCommands_answerHelp(t *testing.T) {
	for _, sub := range commands() {
		for _, flag := range []string{"--help", "-h"} {
			args := []string{flag}
			want := "Usage: acpbridge"
			if sub.name != "" {
				args = []string{sub.name, flag}
				want += " " + sub.name
			}
			var stdout, stderr bytes.Buffer
			code := run(args, strings.NewReader(""), &stdout, &stderr)
			if code != 0 || !strings.Contains(stdout.String(), want) || stderr.Len() > 0 {
				t.Errorf("acpbridge %q: exit %d, stdout %q, stderr %q; want 0 and %q on stdout alone", args, code, stdout.String(), stderr.String(), want)
			}
		}
	}
}

// find picks the command args[0] names, else the bridge with all of args.
func TestFind(t *testing.T) {
	cmds := commands()
	for _, sub := range cmds {
		if sub.name == "" {
			continue
		}
		if got, rest := find(cmds, []string{sub.name, "x"}); got.name != sub.name || !slices.Equal(rest, []string{"x"}) {
			t.Errorf("find %q: %q %q", sub.name, got.name, rest)
		}
	}
	for _, args := range [][]string{nil, {""}, {"--agent", "doctor"}, {"nosuch"}} {
		if got, rest := find(cmds, args); got.name != "" || !slices.Equal(rest, args) {
			t.Errorf("find %q: %q %q, want the bridge with every argument", args, got.name, rest)
		}
	}
}
