#!/usr/bin/env bash
# Fails when a C++ file of the tree differs from .clang-format's style.
set -euo pipefail
cd "$1"
files=$(git ls-files '*.cc' '*.h' 2>/dev/null || find core transports tools tests bench fuzz -name '*.cc' -o -name '*.h')
clang-format --dry-run -Werror $files
echo "clang-format: $(echo "$files" | wc -w) files clean"
