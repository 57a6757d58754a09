#!/usr/bin/env bash
# Fact extraction for a whole library and its cost per fact entry: `rocqa extract` with
# no endpoint (facts read off every in-scope API's graph, entries rendered, validated,
# de-duplicated and written), against a baseline in the same run: planning the LLM
# questions of the same library (`rocqa extract --dry-run`). Both on a warm index.
#
# usage: benches/facts.sh [LIB] [VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-rocblas}
VERSION=${2:-6.4.4}
cargo build --release --quiet
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/root"
cp -r rocqa.toml allowlists question_templates "$TMP/root/"
ln -s "$PWD/rocm_sources" "$TMP/root/rocm_sources"
BIN=$PWD/target/release/rocqa
"$BIN" --root "$TMP/root" index --lib "$LIB" --version "$VERSION" > /dev/null   # warm the cache
run() {
  rm -rf "$TMP/root/out"
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" env -u ROCQA_LLM_URL \
    "$BIN" --root "$TMP/root" extract --lib "$LIB" --version "$VERSION" "$@" > "$TMP/out" 2>&1 || true
  read -r wall user sys rss < "$TMP/t"
}
run --dry-run
P=$(wc -l < "$TMP/root/out/$LIB/$VERSION/dry-run/prompts.jsonl")
printf '%s %s baseline, planning the dry run: %d prompts in %.2f s, %.3f ms CPU per prompt, peak RSS %.0f MB\n' \
  "$LIB" "$VERSION" "$P" "$wall" "$(echo "($user + $sys) * 1000 / $P" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
run
N=$(wc -l < "$TMP/root/out/$LIB/$VERSION/entries.jsonl")
F=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['fact_entries']['facts'])" "$TMP/root/out/$LIB/$VERSION/manifest.json")
printf '%s %s facts: %d facts, %d fact entries in %.2f s, %.3f ms CPU per entry, peak RSS %.0f MB\n' \
  "$LIB" "$VERSION" "$F" "$N" "$wall" "$(echo "($user + $sys) * 1000 / $N" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
