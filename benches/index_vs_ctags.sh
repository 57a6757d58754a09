#!/usr/bin/env bash
# Cold and warm `rocqa index` against `ctags -R` (universal-ctags) on the same tree,
# measured in the same run: ctags is the floor for "read and tokenize the tree".
#
# usage: benches/index_vs_ctags.sh [LIB] [VERSION] [RUNS]
# Needs: the tree fetched (rocqa sources fetch), universal-ctags, GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-rocblas}
VERSION=${2:-6.4.4}
RUNS=${3:-5}
TREE=rocm_sources/$LIB-$VERSION
[ -d "$TREE/library" ] || { echo "no tree at $TREE: run rocqa sources fetch --lib $LIB --version $VERSION" >&2; exit 2; }
command -v ctags >/dev/null || { echo "ctags missing: apt-get install universal-ctags" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time missing: apt-get install time" >&2; exit 2; }
cargo build --release --quiet
BIN=target/release/rocqa
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

# One measurement: prints "seconds max_rss_kb".
measure() { /usr/bin/time -f "%e %M" -o "$TMP/t" "$@" >/dev/null 2>&1; cat "$TMP/t"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

: > "$TMP/ctags"; : > "$TMP/cold"; : > "$TMP/warm"; : > "$TMP/rss"
for _ in $(seq "$RUNS"); do
  measure ctags -R -f "$TMP/tags" "$TREE/library" | awk '{print $1}' >> "$TMP/ctags"
  measure "$BIN" index --lib "$LIB" --version "$VERSION" --no-cache > "$TMP/c"
  awk '{print $1}' "$TMP/c" >> "$TMP/cold"; awk '{print $2}' "$TMP/c" >> "$TMP/rss"
  measure "$BIN" index --lib "$LIB" --version "$VERSION" > "$TMP/w"
  awk '{print $1}' "$TMP/w" >> "$TMP/warm"; awk '{print $2}' "$TMP/w" >> "$TMP/rss"
done
C=$(median < "$TMP/ctags"); K=$(median < "$TMP/cold"); W=$(median < "$TMP/warm")
RSS=$(sort -n "$TMP/rss" | tail -1)
BYTES=$(find "$TREE/library" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -printf '%s\n' | awk '{s+=$1} END {print s}')
echo "tree: $TREE/library ($((BYTES / 1000)) KB of C++), $RUNS runs each, $(nproc) cores, medians:"
printf '  ctags -R (baseline)    %6.2f s\n' "$C"
printf '  rocqa index, cold      %6.2f s   %.1fx ctags (target <= 4x)\n' "$K" "$(echo "$K / $C" | bc -l)"
printf '  rocqa index, warm      %6.2f s   %.1fx ctags (target <= 1x)\n' "$W" "$(echo "$W / $C" | bc -l)"
printf '  peak RSS, rocqa index  %6.1f MB\n' "$(echo "$RSS / 1024" | bc -l)"
