package registry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validate checks a manifest against the registry's schema.
func validate(t *testing.T, manifest []byte) map[string]any {
	t.Helper()
	c := jsonschema.NewCompiler()
	schema, err := c.Compile("testdata/agent.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(manifest))
	if err != nil {
		t.Fatalf("the manifest is not JSON: %v", err)
	}
	if err := schema.Validate(v); err != nil {
		t.Errorf("the manifest breaks the registry's schema: %v", err)
	}
	var m map[string]any
	json.Unmarshal(manifest, &m)
	return m
}

// release runs scripts/release.sh for this machine's platform into a
// temporary directory.
func release(t *testing.T, version string) string {
	t.Helper()
	dist := t.TempDir()
	cmd := exec.Command("bash", "../scripts/release.sh")
	cmd.Env = append(os.Environ(), "VERSION="+version, "DIST="+dist, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	return dist
}

// The release's manifest is a valid registry entry whose archive holds an
// acpbridge that reports the version, with the checksum SHA256SUMS says.
func TestRelease_buildsAValidEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: the release build does not run with -short")
	}
	const version = "1.2.3"
	dist := release(t, version)
	m := validate(t, mustRead(t, filepath.Join(dist, "agent.json")))
	if m["id"] != "acpbridge" || m["version"] != version {
		t.Errorf("manifest id %v version %v", m["id"], m["version"])
	}
	binary := m["distribution"].(map[string]any)["binary"].(map[string]any)
	platform := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	target, _ := binary[runtime.GOOS+"-"+platform].(map[string]any)
	if target == nil || len(binary) != 1 {
		t.Fatalf("binary targets %v; want this machine's only", binary)
	}
	url, _ := target["archive"].(string)
	if !strings.Contains(url, "/download/v"+version+"/") || target["cmd"] != "./acpbridge" {
		t.Errorf("target %v: want the release's URL (the registry checks its version) and ./acpbridge", target)
	}
	archive := filepath.Join(dist, filepath.Base(url))
	sums := string(mustRead(t, filepath.Join(dist, "SHA256SUMS")))
	sum := sha256.Sum256(mustRead(t, archive))
	if !strings.Contains(sums, hex.EncodeToString(sum[:])+"  "+filepath.Base(url)) {
		t.Errorf("SHA256SUMS:\n%s\nlacks %s", sums, filepath.Base(url))
	}
	bin := extract(t, archive, "acpbridge")
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "acpbridge "+version {
		t.Errorf("--version: %q, %v", out, err)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(dist, "icon.svg")), mustRead(t, "icon.svg")) {
		t.Error("the release's icon is not registry/icon.svg")
	}
}

// The template names the four platforms the release builds by default,
// and the icon passes the registry's checks: 16x16 and monochrome.
func TestTemplateAndIcon(t *testing.T) {
	script := string(mustRead(t, "../scripts/release.sh"))
	m := regexp.MustCompile(`PLATFORMS=\$\{PLATFORMS:-([^}]*)\}`).FindStringSubmatch(script)
	if m == nil {
		t.Fatal("no default PLATFORMS in release.sh")
	}
	got := strings.Fields(m[1])
	sort.Strings(got)
	if want := "darwin/amd64 darwin/arm64 linux/amd64 linux/arm64"; strings.Join(got, " ") != want {
		t.Errorf("release.sh builds %v; want %s", got, want)
	}
	filled := strings.NewReplacer("@VERSION@", "0.0.1", "@TARGETS@",
		`"linux-x86_64": {"archive": "https://example.com/v0.0.1/a.tar.gz", "cmd": "./acpbridge"}`).Replace(string(mustRead(t, "agent.json.in")))
	validate(t, []byte(filled))

	icon := string(mustRead(t, "icon.svg"))
	if !regexp.MustCompile(`<svg[^>]*\swidth="16"[^>]*\sheight="16"`).MatchString(icon) {
		t.Error("the icon is not 16x16")
	}
	for _, m := range regexp.MustCompile(`\b(?:fill|stroke)\s*=\s*"([^"]+)"`).FindAllStringSubmatch(icon, -1) {
		if v := strings.ToLower(m[1]); v != "currentcolor" && v != "none" {
			t.Errorf("the icon has a hard-coded color %q (the registry wants currentColor or none)", m[1])
		}
	}
	if !strings.Contains(icon, "currentColor") {
		t.Error("the icon does not use currentColor")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// extract writes one file of a .tar.gz into a temporary directory.
func extract(t *testing.T, archive, name string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s has no %s: %v", archive, name, err)
		}
		if h.Name != name {
			continue
		}
		if h.Mode&0o111 == 0 {
			t.Errorf("%s is not executable in the archive", name)
		}
		out := filepath.Join(t.TempDir(), name)
		w, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		return out
	}
}
