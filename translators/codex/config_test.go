package codex

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The model config.toml names: the top-level one, its profile's over
// it, a -c override over both; a table's own model key is not the
// model.
func TestConfigModels(t *testing.T) {
	home := t.TempDir()
	toml := `# the user's
model = "top" # a comment
profile = 'work'
model_reasoning_effort = "high"

[model_providers.x]
model = "not-this"

[profiles.work]
model = "from-profile"
`
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"CODEX_HOME=" + home}
	want := []modelDoc{{ID: "from-profile", Model: "from-profile", DisplayName: "from-profile", IsDefault: true, DefaultReasoningEffort: "high"}}
	if diff := cmp.Diff(want, configModels(env, []string{"app-server"})); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	got := configModels(env, []string{"app-server", "-c", `model="flag"`})
	if len(got) != 1 || got[0].Model != "flag" {
		t.Errorf("with -c model=\"flag\": %+v; want the flag's model", got)
	}
	if got := configModels([]string{"CODEX_HOME=" + t.TempDir()}, nil); got != nil {
		t.Errorf("with no config.toml: %+v; want none", got)
	}
}
