#!/usr/bin/env bash
# Fetch the official ACP JSON schema for the conformance test
# (internal/acpschema): installs the npm package @agentclientprotocol/sdk
# into a cache directory and prints the path of schema/v1/schema.json.
# The schema is another project's and is not committed here.
#
#   ACP_SCHEMA_VERSION  package version (default pinned below)
#   ACP_SCHEMA_DIR      cache directory (default: <repo>/.cache/acp-schema)
#
# Use: export ACP_SCHEMA=$(scripts/acp-schema.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="${ACP_SCHEMA_VERSION:-2.4.0}"
dir="${ACP_SCHEMA_DIR:-$root/.cache/acp-schema}"
schema="$dir/node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"
have="$dir/node_modules/@agentclientprotocol/sdk/package.json"
if [ -f "$schema" ] && grep -q "\"version\": \"$version\"" "$have" 2>/dev/null; then
	echo "$schema"
	exit 0
fi
command -v npm >/dev/null || { echo "acp-schema: npm is not installed" >&2; exit 1; }
mkdir -p "$dir"
# --ignore-scripts: nothing of the package runs; only its files are used.
npm install --silent --no-audit --no-fund --ignore-scripts --no-save \
	--prefix "$dir" "@agentclientprotocol/sdk@$version" >&2
[ -f "$schema" ] || { echo "acp-schema: $schema missing after install" >&2; exit 1; }
echo "$schema"
