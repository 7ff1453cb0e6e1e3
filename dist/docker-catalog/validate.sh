#!/usr/bin/env bash
# Checks dist/docker-catalog/server.yaml: against schema.json (the fields a
# local entry of the Docker MCP catalog uses), that the container has no
# network, and that the template names the entry's own config parameter.
# Needs check-jsonschema (pip install check-jsonschema==0.39.0), or set
# CHECK_JSONSCHEMA to it.
set -euo pipefail
cd "$(dirname "$0")"
"${CHECK_JSONSCHEMA:-check-jsonschema}" --schemafile schema.json server.yaml
grep -qx '  disableNetwork: true' server.yaml || { echo "server.yaml: networking must be disabled" >&2; exit 1; }
name=$(sed -n 's/^name: //p' server.yaml)
grep -q "{{$name.paths|volume-target|into}}" server.yaml || { echo "server.yaml: run.command must pass {{$name.paths|volume-target|into}}" >&2; exit 1; }
echo "server.yaml: ok"
