#!/usr/bin/env bash
# The replay of `fsage git-age` as a plain shell loop of the same git commands (no measurements):
# the baseline fsage's own overhead is measured against (BENCHMARKS.md).
# Usage: scripts/git-age-baseline.sh REPO_OR_BUNDLE EMPTY_DIR [COMMITS]
set -euo pipefail
src=$1 dir=$2 n=${3:-}
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
if [ -f "$src" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  git clone -q --bare "$src" "$tmp/source.git"; src=$tmp/source.git
fi
cd "$dir"
git init -q -b master .
git config user.name fsage; git config user.email fsage@localhost
git config pull.rebase false; git config gc.auto 0
list=$(git -C "$src" rev-list --reverse --first-parent HEAD)
if [ -n "$n" ]; then list=$(echo "$list" | sed -n "1,${n}p"); fi
start=$(date +%s.%N)
for sha in $list; do
  git -c uploadpack.allowReachableSHA1InWant=true pull --no-edit -q -s recursive -X theirs "$src" "$sha"
done
end=$(date +%s.%N)
echo "commits $(echo "$list" | wc -l) seconds $(awk "BEGIN{print $end - $start}")"
