package registry

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/pe"
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

// release runs scripts/release.sh for platforms (GOOS/GOARCH) into a
// temporary directory.
func release(t *testing.T, version string, platforms ...string) string {
	t.Helper()
	dist := t.TempDir()
	cmd := exec.Command("bash", "../scripts/release.sh")
	cmd.Env = append(os.Environ(), "VERSION="+version, "DIST="+dist, "PLATFORMS="+strings.Join(platforms, " "))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	return dist
}

// The release's manifest is a valid registry entry whose archives have
// the checksums SHA256SUMS says: this machine's holds an acpbridge that
// reports the version, and Windows' (amd64: arm64 differs only in GOARCH)
// is a zip holding acpbridge.exe, a Windows executable for that machine.
// Nothing Windows runs here (see docs/install.md, "Windows"), so it is not started.
func TestRelease_buildsAValidEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: the release build does not run with -short")
	}
	const version = "1.2.3"
	here := runtime.GOOS + "/" + runtime.GOARCH
	platforms := []string{here}
	if runtime.GOOS != "windows" {
		platforms = append(platforms, "windows/amd64")
	}
	dist := release(t, version, platforms...)
	m := validate(t, mustRead(t, filepath.Join(dist, "agent.json")))
	if m["id"] != "acpbridge" || m["version"] != version {
		t.Errorf("manifest id %v version %v", m["id"], m["version"])
	}
	binary := m["distribution"].(map[string]any)["binary"].(map[string]any)
	if len(binary) != len(platforms) {
		t.Fatalf("binary targets %v; want %v only", binary, platforms)
	}
	sums := string(mustRead(t, filepath.Join(dist, "SHA256SUMS")))
	for _, platform := range platforms {
		goos, goarch, _ := strings.Cut(platform, "/")
		archive, cmd := archiveOf(t, dist, version, binary, goos, goarch, sums)
		switch {
		case platform == here:
			bin := extract(t, archive, strings.TrimPrefix(cmd, "./"))
			out, err := exec.Command(bin, "--version").Output()
			if err != nil || strings.TrimSpace(string(out)) != "acpbridge "+version {
				t.Errorf("--version: %q, %v", out, err)
			}
		case goos == "windows":
			checkWindowsExe(t, archive, goarch)
		}
	}
	if !bytes.Equal(mustRead(t, filepath.Join(dist, "icon.svg")), mustRead(t, "icon.svg")) {
		t.Error("the release's icon is not registry/icon.svg")
	}
}

// archiveOf checks the manifest's target for goos/goarch (its URL, the
// registry's check of the version in it; its command; its checksum) and
// returns its archive and command.
func archiveOf(t *testing.T, dist, version string, binary map[string]any, goos, goarch, sums string) (archive, cmd string) {
	t.Helper()
	platform := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[goarch]
	target, _ := binary[goos+"-"+platform].(map[string]any)
	if target == nil {
		t.Fatalf("binary targets %v: no %s-%s", binary, goos, platform)
	}
	url, _ := target["archive"].(string)
	wantCmd, ext := "./acpbridge", ".tar.gz"
	if goos == "windows" {
		wantCmd, ext = "./acpbridge.exe", ".zip"
	}
	if !strings.Contains(url, "/download/v"+version+"/") || !strings.HasSuffix(url, ext) || target["cmd"] != wantCmd {
		t.Errorf("target %v: want the release's URL (the registry checks its version) of a %s, and %s", target, ext, wantCmd)
	}
	archive = filepath.Join(dist, filepath.Base(url))
	sum := sha256.Sum256(mustRead(t, archive))
	if !strings.Contains(sums, hex.EncodeToString(sum[:])+"  "+filepath.Base(url)) {
		t.Errorf("SHA256SUMS:\n%s\nlacks %s", sums, filepath.Base(url))
	}
	return archive, wantCmd
}

// checkWindowsExe checks that a Windows release zip holds acpbridge.exe
// alone, a Windows console executable for goarch.
func checkWindowsExe(t *testing.T, archive, goarch string) {
	t.Helper()
	zr, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 || zr.File[0].Name != "acpbridge.exe" {
		t.Fatalf("%s holds %v; want acpbridge.exe alone", archive, zr.File)
	}
	r, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pe.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("acpbridge.exe is not a Windows executable: %v", err)
	}
	machine := map[string]uint16{"amd64": pe.IMAGE_FILE_MACHINE_AMD64, "arm64": pe.IMAGE_FILE_MACHINE_ARM64}[goarch]
	opt, _ := f.OptionalHeader.(*pe.OptionalHeader64)
	if f.Machine != machine || opt == nil || opt.Subsystem != pe.IMAGE_SUBSYSTEM_WINDOWS_CUI {
		t.Errorf("acpbridge.exe: machine %#x, header %T; want %#x (%s), a console program", f.Machine, f.OptionalHeader, machine, goarch)
	}
}

// The template names the six platforms the release builds by default,
// and the icon passes the registry's checks: 16x16 and monochrome.
func TestTemplateAndIcon(t *testing.T) {
	script := string(mustRead(t, "../scripts/release.sh"))
	m := regexp.MustCompile(`PLATFORMS=\$\{PLATFORMS:-([^}]*)\}`).FindStringSubmatch(script)
	if m == nil {
		t.Fatal("no default PLATFORMS in release.sh")
	}
	got := strings.Fields(m[1])
	sort.Strings(got)
	if want := "darwin/amd64 darwin/arm64 linux/amd64 linux/arm64 windows/amd64 windows/arm64"; strings.Join(got, " ") != want {
		t.Errorf("release.sh builds %v; want %s", got, want)
	}
	var targets []string
	for _, p := range got {
		goos, goarch, _ := strings.Cut(p, "/")
		name := goos + "-" + map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[goarch]
		archive, cmd := "a.tar.gz", "./acpbridge"
		if goos == "windows" {
			archive, cmd = "a.zip", "./acpbridge.exe"
		}
		targets = append(targets, `"`+name+`": {"archive": "https://example.com/v0.0.1/`+archive+`", "cmd": "`+cmd+`"}`)
	}
	filled := strings.NewReplacer("@VERSION@", "0.0.1", "@TARGETS@", strings.Join(targets, ",\n")).Replace(string(mustRead(t, "agent.json.in")))
	binary := validate(t, []byte(filled))["distribution"].(map[string]any)["binary"].(map[string]any)
	if _, ok := binary["windows-aarch64"]; !ok || len(binary) != 6 {
		t.Errorf("the filled template's targets: %v", binary)
	}

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
