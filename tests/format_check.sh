#!/usr/bin/env bash
# clang-format (.clang-format at the root) on the C++ lines the last commit changed: the lines a
# commit touches are formatted, old lines are left as they are until someone edits them.
# FORMAT_BASE picks another base (default HEAD~1, the first parent: a merge is checked as a
# whole). Skips (77) outside a git checkout, on a first commit or a shallow clone without the
# base, and without git-clang-format (Debian: clang-format).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${FORMAT_BASE:-HEAD~1}
command -v git-clang-format >/dev/null || { echo "skip: no git-clang-format"; exit 77; }
git rev-parse --git-dir >/dev/null 2>&1 || { echo "skip: not a git checkout"; exit 77; }
git rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "skip: no $base"; exit 77; }
out=$(git clang-format --diff --extensions cc,h "$base" HEAD -- src tests bench examples 2>&1 \
      || true)
case "$out" in
  *"no modified files to format"*|*"clang-format did not modify any files"*|"")
    echo "ok: the lines changed since $base are clang-formatted"; exit 0 ;;
esac
echo "these changed lines are not clang-formatted (fix: git clang-format $base):"
echo "$out"
exit 1
