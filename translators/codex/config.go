package codex

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A new user's first session/new finds neither the server's models nor
// those kept on disk, and the app-server takes a while to start and list
// them. What codex's config.toml says is known at once: the model it runs
// (model, or its profile's), and the reasoning effort. The session offers
// that model until the server lists its own.

// configModels are the models codex's config (config.toml in CODEX_HOME
// by env, then the -c overrides in args) promises: the model it names,
// as the default, with the effort it names; none if it names no model
// (codex then runs a default of its own, which only the server's list
// says).
func configModels(env, args []string) []modelDoc {
	b, _ := os.ReadFile(filepath.Join(codexHome(env), "config.toml"))
	top := tomlKeys(b, "")
	if profile := top["profile"]; profile != "" {
		for k, v := range tomlKeys(b, "profiles."+profile) {
			top[k] = v
		}
	}
	for k, v := range overrides(args) {
		top[k] = v
	}
	model := top["model"]
	if model == "" {
		return nil
	}
	return []modelDoc{{ID: model, Model: model, DisplayName: model, IsDefault: true, DefaultReasoningEffort: top["model_reasoning_effort"]}}
}

// overrides are the top-level string values of codex's -c key=value
// flags in args.
func overrides(args []string) map[string]string {
	out := map[string]string{}
	for i, a := range args {
		kv, ok := strings.CutPrefix(a, "--config=")
		if !ok && (a == "-c" || a == "--config") && i+1 < len(args) {
			kv, ok = args[i+1], true
		}
		if k, v, found := strings.Cut(kv, "="); ok && found {
			if s, isString := tomlValue(v); isString {
				out[strings.TrimSpace(k)] = s
			}
		}
	}
	return out
}

// tomlKeys are the string values of the keys of table (top-level ones
// for "") in the TOML document b, read line by line: the simple
// `key = "value"` lines config.toml holds; anything else is skipped.
func tomlKeys(b []byte, table string) map[string]string {
	out := map[string]string{}
	current := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			current = strings.Trim(line, "[] \t")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || current != table {
			continue
		}
		if s, isString := tomlValue(v); isString {
			out[strings.Trim(strings.TrimSpace(k), `"`)] = s
		}
	}
	return out
}

// tomlValue is the TOML value v (with any comment after it) as a string,
// if it is a basic or literal one-line string.
func tomlValue(v string) (string, bool) {
	v = strings.TrimSpace(v)
	switch {
	case strings.HasPrefix(v, `"`):
		quoted, err := strconv.QuotedPrefix(v)
		if err != nil {
			return "", false
		}
		s, err := strconv.Unquote(quoted)
		return s, err == nil
	case strings.HasPrefix(v, "'"):
		end := strings.Index(v[1:], "'")
		if end < 0 {
			return "", false
		}
		return v[1 : end+1], true
	}
	return "", false
}
