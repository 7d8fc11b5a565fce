#!/usr/bin/env bash
# Builds the Dendrite homeserver that baton's Matrix tests run against into
# a cache directory ($BATON_DENDRITE, default ~/.cache/baton/dendrite),
# once per version: a second run with the same go.sum does nothing.
set -euo pipefail
cd "$(dirname "$0")"
out=${BATON_DENDRITE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/dendrite}
stamp=$(sha256sum go.sum | cut -c1-16)
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] &&
	[ -x "$out/dendrite" ] && [ -x "$out/generate-keys" ] && [ -x "$out/generate-config" ]; then
	exit 0
fi
mkdir -p "$out"
echo "building Dendrite into $out"
go build -trimpath -buildvcs=false -o "$out/" \
	github.com/element-hq/dendrite/cmd/dendrite \
	github.com/element-hq/dendrite/cmd/generate-keys \
	github.com/element-hq/dendrite/cmd/generate-config
echo "$stamp" >"$out/.stamp"
