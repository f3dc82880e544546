#!/bin/sh
# regen.sh SDK_GIT TS_VERSION: regenerates this copy's *_gen.go from the v1
# schemas of @agentclientprotocol/sdk@TS_VERSION with acp-go-sdk's own
# generator (cmd/generate at SDK_GIT's HEAD, patched with generate.patch).
# SDK_GIT is a git dir of github.com/coder/acp-go-sdk. See ../PATCHED.md.
set -eu
SDK_GIT=$1 TS=$2
HERE=$(cd "$(dirname "$0")" && pwd) OUT=$(cd "$HERE/.." && pwd)
W=$(mktemp -d)
git -C "$SDK_GIT" archive HEAD cmd/generate | tar -x -C "$W"
(cd "$W" && git apply "$HERE/generate.patch")
(cd "$W" && npm pack --silent "@agentclientprotocol/sdk@$TS" >/dev/null && tar -xzf agentclientprotocol-sdk-*.tgz)
S=$W/package/schema/v1
mkdir "$W/schema"
cp "$S/schema.json" "$W/schema/"
# The unstable schema's links point at /protocol/v1/draft/; without this every
# shared type's description differs and the merge makes an Unstable copy of it.
sed 's#agentclientprotocol.com/protocol/v1/draft/#agentclientprotocol.com/protocol/v1/#g' \
	"$S/schema.unstable.json" >"$W/schema/schema.unstable.json"
python3 "$HERE/derive_meta.py" "$W/schema/schema.json" >"$W/schema/meta.json"
python3 "$HERE/derive_meta.py" "$W/schema/schema.unstable.json" >"$W/schema/meta.unstable.json"
(cd "$W/cmd/generate" && go run . -schema "$W/schema" -out "$OUT")
gofmt -l "$OUT"
rm -rf "$W"
