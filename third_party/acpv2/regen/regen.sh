#!/bin/sh
# regen.sh SDK_GIT TS: regenerates this package's constants_gen.go and
# types_gen.go from the v2 schemas of @agentclientprotocol/sdk with
# acp-go-sdk's own generator (cmd/generate at SDK_GIT's HEAD, patched with
# v1's generate.patch and then generate-v2.patch). SDK_GIT is a git dir of
# github.com/coder/acp-go-sdk; TS is the TS SDK's version (npm pack'ed) or
# the directory of an installed copy of it. See ../README.md.
set -eu
SDK_GIT=$1 TS=$2
HERE=$(cd "$(dirname "$0")" && pwd) OUT=$(cd "$HERE/.." && pwd)
V1=$(cd "$HERE/../../acp-go-sdk/regen" && pwd)
W=$(mktemp -d)
git -C "$SDK_GIT" archive HEAD cmd/generate | tar -x -C "$W"
(cd "$W" && git apply "$V1/generate.patch" && git apply "$HERE/generate-v2.patch")
if [ -d "$TS" ]; then
	P=$(cd "$TS" && pwd)
else
	(cd "$W" && npm pack --silent "@agentclientprotocol/sdk@$TS" >/dev/null && tar -xzf agentclientprotocol-sdk-*.tgz)
	P=$W/package
fi
S=$P/schema/v2
mkdir "$W/schema"
cp "$S/schema.json" "$W/schema/"
# As for v1: the unstable schema's links point at /protocol/v2/draft/, and
# without this every shared type differs and the merge copies it as Unstable*.
sed 's#agentclientprotocol.com/protocol/v2/draft/#agentclientprotocol.com/protocol/v2/#g' \
	"$S/schema.unstable.json" >"$W/schema/schema.unstable.json"
python3 "$V1/derive_meta.py" "$W/schema/schema.json" 2 >"$W/schema/meta.json"
python3 "$V1/derive_meta.py" "$W/schema/schema.unstable.json" 2 >"$W/schema/meta.unstable.json"
(cd "$W/cmd/generate" && go run . -package acpv2 -types-only -schema "$W/schema" -out "$OUT")
gofmt -l "$OUT"
rm -rf "$W"
