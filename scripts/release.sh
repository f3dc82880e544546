#!/usr/bin/env bash
# release.sh builds acpbridge's release archives and its ACP Registry
# manifest, with nothing but Go:
#
#   dist/acpbridge-VERSION-OS-ARCH.tar.gz   one per platform, holding ./acpbridge
#   dist/acpbridge-VERSION-windows-ARCH.zip for Windows, holding acpbridge.exe
#   dist/SHA256SUMS                         their checksums
#   dist/agent.json                         registry/agent.json.in with the version and
#                                           the archives' URLs filled in (the registry's
#                                           platform names: linux-x86_64, darwin-aarch64 …)
#   dist/icon.svg                           the registry icon
#
# VERSION is $VERSION, else the latest tag without its "v" (git describe
# --tags --abbrev=0), else main.go's default; the binary reports it with
# --version. The archives' URLs start with $BASE_URL (default the GitHub
# release of that version). PLATFORMS (default "linux/amd64 linux/arm64
# darwin/amd64 darwin/arm64 windows/amd64 windows/arm64") picks the
# targets, DIST (default dist) the output directory.
#
#   bash scripts/release.sh
#   VERSION=0.2.0 PLATFORMS="linux/amd64" bash scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."

default_version=$(sed -n 's/^var version = "\(.*\)"$/\1/p' main.go)
tag=$(git describe --tags --abbrev=0 2>/dev/null || true)
VERSION=${VERSION:-${tag#v}}
VERSION=${VERSION:-$default_version}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
DIST=${DIST:-dist}
BASE_URL=${BASE_URL:-https://github.com/acpbridge/acpbridge/releases/download/v$VERSION}

# registry_platform OS ARCH prints the ACP Registry's name for a Go target.
registry_platform() {
	local arch=$2
	case $arch in
	amd64) arch=x86_64 ;;
	arm64) arch=aarch64 ;;
	esac
	echo "$1-$arch"
}

# zipper is a Go program (archive/zip) that writes the zip $1 holding the
# files after it, by their base names: no zip tool is needed.
zipper=$(mktemp -d)
trap 'rm -rf "$zipper"' EXIT
cat >"$zipper/zip.go" <<'EOF'
package main

import (
	"archive/zip"
	"io"
	"log"
	"os"
	"path/filepath"
)

func main() {
	out, err := os.Create(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	zw := zip.NewWriter(out)
	for _, name := range os.Args[2:] {
		f, err := os.Open(name)
		if err != nil {
			log.Fatal(err)
		}
		info, err := f.Stat()
		if err != nil {
			log.Fatal(err)
		}
		h, err := zip.FileInfoHeader(info)
		if err != nil {
			log.Fatal(err)
		}
		h.Name, h.Method = filepath.Base(name), zip.Deflate
		w, err := zw.CreateHeader(h)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := io.Copy(w, f); err != nil {
			log.Fatal(err)
		}
		f.Close()
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := out.Close(); err != nil {
		log.Fatal(err)
	}
}
EOF

rm -rf "$DIST"
mkdir -p "$DIST"
targets=""
for platform in $PLATFORMS; do
	os=${platform%/*} arch=${platform#*/}
	name="acpbridge-$VERSION-$os-$arch"
	exe=acpbridge archive=$name.tar.gz
	if [ "$os" = windows ]; then
		exe=acpbridge.exe archive=$name.zip
	fi
	stage=$(mktemp -d)
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$stage/$exe" .
	if [ "$os" = windows ]; then
		go run "$zipper/zip.go" "$DIST/$archive" "$stage/$exe"
	else
		tar -C "$stage" -czf "$DIST/$archive" "$exe"
	fi
	rm -rf "$stage"
	entry=$(printf '      "%s": {\n        "archive": "%s/%s",\n        "cmd": "./%s",\n        "args": ["--agent", "auto"]\n      }' \
		"$(registry_platform "$os" "$arch")" "$BASE_URL" "$archive" "$exe")
	targets+="${targets:+,$'\n'}$entry"
	echo "release: $DIST/$archive" >&2
done
(cd "$DIST" && shopt -s nullglob && sha256sum ./*.tar.gz ./*.zip | sed 's| \./| |' >SHA256SUMS)
awk -v version="$VERSION" -v targets="$targets" '
	/@TARGETS@/ { print targets; next }
	{ gsub(/@VERSION@/, version); print }
' registry/agent.json.in >"$DIST/agent.json"
cp registry/icon.svg "$DIST/icon.svg"
echo "release: $DIST/agent.json, $DIST/SHA256SUMS" >&2
