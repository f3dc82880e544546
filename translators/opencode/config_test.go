package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/google/go-cmp/cmp"
)

func TestStripJSONC(t *testing.T) {
	in := `{
  // a comment
  "model": "a/b", /* another */
  "url": "http://x//y", "s": "a \" // not a comment",
  "list": [1, 2,],
}`
	var got map[string]any
	if err := json.Unmarshal(stripJSONC([]byte(in)), &got); err != nil {
		t.Fatalf("%v:\n%s", err, stripJSONC([]byte(in)))
	}
	want := map[string]any{"model": "a/b", "url": "http://x//y", "s": `a " // not a comment`, "list": []any{1.0, 2.0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// The catalog of the config files: the global file's model and provider,
// the project's agents and default agent over it.
func TestConfigCatalog(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".config", "opencode", "opencode.jsonc"), `{
		// the user's
		"model": "p/m1",
		"provider": {"p": {"name": "P", "models": {"m1": {"name": "M1", "limit": {"context": 1000}}, "m2": {}}}},
	}`)
	write(t, filepath.Join(project, "opencode.json"), `{"default_agent": "review",
		"agent": {"review": {"mode": "primary", "description": "Reviews"}, "helper": {"mode": "subagent"}, "plan": {"disable": true}}}`)
	got := configCatalog([]string{"HOME=" + home}, project).kept()
	want := keptCatalog{
		Agents:       []agent.ConfigValue{builtinAgents[0], {Value: "review", Name: "review", Description: "Reviews"}},
		DefaultAgent: "review",
		Models:       []keptModel{{Ref: "p/m1", Name: "M1 (P)", Context: 1000}, {Ref: "p/m2", Name: "m2 (P)"}}, DefaultModel: "p/m1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// A config that names no model promises no catalog: OpenCode picks the
// model.
func TestConfigCatalog_noModel(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, ".config", "opencode", "opencode.json"), `{"default_agent": "plan"}`)
	if cat := configCatalog([]string{"HOME=" + home}, t.TempDir()); cat != nil {
		t.Errorf("catalog %+v; want none", cat.kept())
	}
}

// With a model and nothing else, the catalog is OpenCode's built-in
// modes and that model.
func TestConfigCatalog_modelAlone(t *testing.T) {
	cat := configCatalog([]string{"HOME=" + t.TempDir(), "OPENCODE_CONFIG_CONTENT={\"model\":\"p/m\"}"}, t.TempDir())
	if cat == nil || len(cat.agents) != 2 || cat.defaultAgent != "build" || len(cat.models) != 1 || cat.defaultModel != "p/m" {
		t.Fatalf("catalog %+v; want build and plan, build the default, the model p/m", cat)
	}
	if opts := cat.options(); len(opts) != 2 {
		t.Errorf("options %+v; want the mode and the model", opts)
	}
}

func write(t *testing.T, file, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
