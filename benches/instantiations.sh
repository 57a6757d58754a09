#!/usr/bin/env bash
# What the compiler's reading of instantiations (what runs per API, decided by clang)
# adds to a whole no-endpoint `rocqa extract`, and that a second extract pays nothing
# for it. The trees are linked into a fresh root whose cache starts empty; the fast
# index is built first (its time printed beside), then extract runs twice.
#
# usage: benches/instantiations.sh [LIB] [VERSION] [API-GLOB]
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-rocblas}
VERSION=${2:-6.4.4}
API=${3:-}
cargo build --release --quiet
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/root/rocm_sources"
cp -r allowlists question_templates "$TMP/root/"
# The compiler's reading is on for the library measured.
sed "s/^\[library\.$LIB\]\$/&\ncompiler_facts = true/" rocqa.toml > "$TMP/root/rocqa.toml"
grep -q '^compiler_facts = true' "$TMP/root/rocqa.toml"
for p in rocm_sources/*; do ln -s "$PWD/$p" "$TMP/root/rocm_sources/"; done
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/rocqa
T0=$(date +%s.%N)
"$BIN" --root "$TMP/root" index --lib "$LIB" --version "$VERSION" > /dev/null
INDEX=$(echo "$(date +%s.%N) - $T0" | bc -l)
printf '%s %s fast index, cold cache: %.1f s\n' "$LIB" "$VERSION" "$INDEX"
ARGS=(extract --lib "$LIB" --version "$VERSION")
[ -n "$API" ] && ARGS+=(--api "$API")
for run in first second; do
  rm -rf "$TMP/root/out"
  S=$(date +%s.%N)
  env -u ROCQA_LLM_URL "$BIN" --root "$TMP/root" -v "${ARGS[@]}" > /dev/null 2> "$TMP/log" || true
  WALL=$(echo "$(date +%s.%N) - $S" | bc -l)
  LINE=$(grep "Instantiations read" "$TMP/log" | tail -1)
  field() { echo "$LINE" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
  printf '%s %s extract (%s run): %.1f s wall; instantiation readings: %s compiled (%.1f s of compiling), %s from the cache, %s failed\n' \
    "$LIB" "$VERSION" "$run" "$WALL" "$(field compiled)" "$(echo "$(field compile_ms) / 1000" | bc -l)" "$(field cached)" "$(field failed)"
done
