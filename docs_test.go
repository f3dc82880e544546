package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// The docs' own tests: every relative link in the README, CONTRIBUTING.md,
// ARCHITECTURE.md and docs/*.md resolves, and docs/cli.md lists what
// acpbridge's help lists (see CONTRIBUTING.md, "The docs").

// docFiles are the Markdown files whose links are checked, relative to
// the repository's root (this package's directory).
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"}
	more, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("doc file: %v", err)
		}
	}
	return files
}

var (
	// mdLink is an inline link or image: [text](target) or ![alt](target),
	// the target up to the first space or closing parenthesis.
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan is inline code, whose brackets are no links.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// atxHeading is a heading line: its level's #s, then its text.
	atxHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// proseLines returns the lines of a Markdown file outside fenced code
// blocks, each with its line number, and its code spans blanked.
func proseLines(text string) (lines []string, numbers []int) {
	fence := ""
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		lines = append(lines, codeSpan.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) }))
		numbers = append(numbers, i+1)
	}
	return lines, numbers
}

// headingSlugs returns the anchors GitHub makes for a Markdown file's
// headings: each heading's rendered text lower-cased, everything but
// letters, marks, digits, connector punctuation (_), spaces and hyphens
// removed, spaces made hyphens; a slug seen before gets -1, -2, ….
func headingSlugs(text string) map[string]bool {
	slugs := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		m := atxHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := githubSlug(m[2])
		if n, ok := seen[s]; ok {
			seen[s] = n + 1
			s += "-" + itoa(n+1)
		} else {
			seen[s] = 0
		}
		slugs[s] = true
	}
	return slugs
}

// githubSlug is the anchor of one heading's Markdown text.
func githubSlug(heading string) string {
	// The rendered text: a link's text without its target, code spans
	// without their backticks, no emphasis marks.
	heading = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	heading = strings.NewReplacer("`", "", "*", "").Replace(heading)
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

func TestDocs_githubSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Shared servers (`--shared`)":                    "shared-servers---shared",
		"The newest CLIs: `scripts/test.sh --latest`":    "the-newest-clis-scriptstestsh---latest",
		"From sandbox-agent's SDK (0.4.2)":               "from-sandbox-agents-sdk-042",
		"The security defaults, and why":                 "the-security-defaults-and-why",
		"`acpbridge --agent NAME --login`":               "acpbridge---agent-name---login",
		"Codex: the bridge's overhead, and the adapters": "codex-the-bridges-overhead-and-the-adapters",
		"snake_case stays":                               "snake_case-stays",
		"A [link](x.md) in it":                           "a-link-in-it",
	} {
		if got := githubSlug(heading); got != want {
			t.Errorf("githubSlug(%q) = %q, want %q", heading, got, want)
		}
	}
	got := headingSlugs("# A\n## A\n```\n# not a heading\n```\n### A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !got[want] {
			t.Errorf("headingSlugs: no %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("headingSlugs took a line of a code block for a heading")
	}
}

// TestDocs_relativeLinksResolve checks every relative link of the docs:
// its file exists, and a #anchor names one of the target's headings.
func TestDocs_relativeLinksResolve(t *testing.T) {
	slugsOf := map[string]map[string]bool{}
	slugs := func(path string) (map[string]bool, error) {
		if s, ok := slugsOf[path]; ok {
			return s, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		slugsOf[path] = headingSlugs(string(b))
		return slugsOf[path], nil
	}
	links := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines, numbers := proseLines(string(b))
		for i, l := range lines {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := file + ":" + itoa(numbers[i])
				path, anchor, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					if _, err := os.Stat(resolved); err != nil {
						t.Errorf("%s: link %q: %v", where, target, err)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(resolved, ".md") {
					t.Errorf("%s: link %q: an anchor in a file that is not Markdown", where, target)
					continue
				}
				s, err := slugs(resolved)
				if err != nil {
					t.Errorf("%s: link %q: %v", where, target, err)
					continue
				}
				if !s[anchor] {
					t.Errorf("%s: link %q: %s has no heading #%s", where, target, resolved, anchor)
				}
			}
		}
	}
	if links < 50 {
		t.Errorf("found only %d relative links in the docs: is the link pattern broken?", links)
	}
}

// helpOf runs acpbridge (the test binary standing in for it: see
// TestMain) with args and returns what it printed.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "ACPBRIDGE_TEST_AS_BRIDGE=1", "HOME="+home, "XDG_STATE_HOME="+home, "ACPBRIDGE_STATE_DIR=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("acpbridge %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

var (
	// longFlag is a long flag anywhere in a help text or a doc.
	longFlag = regexp.MustCompile(`(?:^|[^A-Za-z0-9-])(--[a-z][a-z0-9-]*)`)
	// shortFlag is a short flag in pflag's list: "  -h, --help".
	shortFlag = regexp.MustCompile(`(?m)^\s+(-[A-Za-z]),\s+--`)
	// usageCommand is a sub-command on a line of a help's Usage: the word
	// after "acpbridge", and any bare word in brackets after it.
	usageCommand = regexp.MustCompile(`(?m)^(?:Usage:)?[ \t]+acpbridge ([a-z][a-z-]*)((?:\s+\[[a-z]+\])*)`)
	// helpPointer is where a help says a sub-command has a help of its own.
	helpPointer = regexp.MustCompile(`\(acpbridge ([a-z][a-z-]*) --help\)`)
	// tableFlag is a flag a table row of docs/cli.md is about.
	tableFlag = regexp.MustCompile("^\\|\\s*`(--?[a-z][a-z0-9-]*)`(?:,\\s*`(-[a-z])`)?")
)

// flagsIn returns the flags a text names, long and short.
func flagsIn(text string) []string {
	var flags []string
	for _, m := range longFlag.FindAllStringSubmatch(text, -1) {
		flags = append(flags, m[1])
	}
	for _, m := range shortFlag.FindAllStringSubmatch(text, -1) {
		flags = append(flags, m[1])
	}
	slices.Sort(flags)
	return slices.Compact(flags)
}

// mentions tells whether doc names flag or command as such: not as part
// of a longer name.
func mentions(doc, name string) bool {
	return regexp.MustCompile(`(?:^|[^A-Za-z0-9-])` + regexp.QuoteMeta(name) + `(?:$|[^A-Za-z0-9-])`).MatchString(doc)
}

// TestDocs_CLIMatchesHelp checks docs/cli.md against acpbridge's help: every
// flag and sub-command `acpbridge --help` lists, and every flag of the
// sub-commands whose own --help it points to (acpbridge serve --help), is
// in docs/cli.md; and every flag a table of docs/cli.md is about is one
// that help lists (a serve flag, serve's).
func TestDocs_CLIMatchesHelp(t *testing.T) {
	b, err := os.ReadFile("docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	main := helpOf(t, "--help")
	if !strings.Contains(main, "Usage:") {
		t.Fatalf("acpbridge --help has no Usage:\n%s", main)
	}
	helps := map[string]string{"": main}
	for _, m := range helpPointer.FindAllStringSubmatch(main, -1) {
		helps[m[1]] = helpOf(t, m[1], "--help")
	}
	if _, ok := helps["serve"]; !ok {
		t.Errorf("acpbridge --help no longer points to acpbridge serve --help; this test expects it to")
	}

	// Sub-commands, and their own sub-commands ("daemons [stop]").
	commands := 0
	for _, m := range usageCommand.FindAllStringSubmatch(main, -1) {
		commands++
		cmd := "acpbridge " + m[1]
		if !mentions(doc, cmd) {
			t.Errorf("docs/cli.md does not name %q, which acpbridge --help lists", cmd)
		}
		for _, sub := range regexp.MustCompile(`\[([a-z]+)\]`).FindAllStringSubmatch(m[2], -1) {
			if !mentions(doc, cmd+" "+sub[1]) {
				t.Errorf("docs/cli.md does not name %q, which acpbridge --help lists", cmd+" "+sub[1])
			}
		}
	}
	if commands < 3 {
		t.Errorf("found %d sub-commands in acpbridge --help, want doctor, daemons and serve at least:\n%s", commands, main)
	}

	// Help to docs.
	for name, help := range helps {
		flags := flagsIn(help)
		if len(flags) < 4 {
			t.Errorf("acpbridge %s --help: found only flags %q", name, flags)
		}
		for _, f := range flags {
			if !mentions(doc, f) {
				t.Errorf("docs/cli.md does not mention %s, which acpbridge %s --help lists", f, name)
			}
		}
	}

	// Docs to help: the flags of docs/cli.md's tables, section by section.
	section := ""
	rows := 0
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "## ") {
			section = l
		}
		m := tableFlag.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		rows++
		help, which := main, "acpbridge --help"
		if strings.Contains(section, "acpbridge serve") {
			help, which = helps["serve"], "acpbridge serve --help"
		}
		for _, f := range m[1:] {
			if f != "" && !slices.Contains(flagsIn(help), f) {
				t.Errorf("docs/cli.md (%s) has a row for %s, which %s does not list", strings.TrimPrefix(section, "## "), f, which)
			}
		}
	}
	if rows < 10 {
		t.Errorf("found only %d flag rows in docs/cli.md's tables", rows)
	}
}
