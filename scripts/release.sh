#!/usr/bin/env bash
# release.sh builds acpbridge's release archives and its ACP Registry
# manifest, with nothing but Go:
#
#   dist/acpbridge-VERSION-OS-ARCH.tar.gz   one per platform, holding ./acpbridge
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
# darwin/amd64 darwin/arm64") picks the targets, DIST (default dist) the
# output directory.
#
#   bash scripts/release.sh
#   VERSION=0.2.0 PLATFORMS="linux/amd64" bash scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."

default_version=$(sed -n 's/^var version = "\(.*\)"$/\1/p' main.go)
tag=$(git describe --tags --abbrev=0 2>/dev/null || true)
VERSION=${VERSION:-${tag#v}}
VERSION=${VERSION:-$default_version}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
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

rm -rf "$DIST"
mkdir -p "$DIST"
targets=""
for platform in $PLATFORMS; do
	os=${platform%/*} arch=${platform#*/}
	name="acpbridge-$VERSION-$os-$arch"
	stage=$(mktemp -d)
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$stage/acpbridge" .
	tar -C "$stage" -czf "$DIST/$name.tar.gz" acpbridge
	rm -rf "$stage"
	entry=$(printf '      "%s": {\n        "archive": "%s/%s.tar.gz",\n        "cmd": "./acpbridge",\n        "args": ["--agent", "auto"]\n      }' \
		"$(registry_platform "$os" "$arch")" "$BASE_URL" "$name")
	targets+="${targets:+,$'\n'}$entry"
	echo "release: $DIST/$name.tar.gz" >&2
done
(cd "$DIST" && sha256sum ./*.tar.gz | sed 's| \./| |' >SHA256SUMS)
awk -v version="$VERSION" -v targets="$targets" '
	/@TARGETS@/ { print targets; next }
	{ gsub(/@VERSION@/, version); print }
' registry/agent.json.in >"$DIST/agent.json"
cp registry/icon.svg "$DIST/icon.svg"
echo "release: $DIST/agent.json, $DIST/SHA256SUMS" >&2
