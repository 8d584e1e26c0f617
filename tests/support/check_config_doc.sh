#!/usr/bin/env bash
# Fails when docs/config.md is not what `ibbcast config-doc` generates.
set -euo pipefail
tool=$1 doc=$2
if ! diff -u "$doc" <("$tool" config-doc); then
  echo "docs/config.md is stale: run  build/tools/ibbcast config-doc > docs/config.md" >&2
  exit 1
fi
echo "docs/config.md matches the config tables"
