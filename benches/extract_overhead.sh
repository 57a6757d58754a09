#!/usr/bin/env bash
# rocqa's own cost per answered question in a full `rocqa extract` run (index load,
# graphs, slices, prompts, HTTP client, validation, JSONL), against an endpoint that
# answers instantly: the scripted server of benches/llm_overhead.rs, in its own process,
# so neither the LLM nor its server is counted. CPU time is the rocqa process's
# user + sys; throughput is answers per second of wall time. Baseline in the same run:
# the same extract at concurrency 1.
#
# usage: benches/extract_overhead.sh [LIB] [VERSION] [LIMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-rocblas}
VERSION=${2:-6.4.4}
LIMIT=${3:-1000}
cargo build --release --quiet
BENCH=$(cargo bench --bench llm_overhead --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
[ -x "$BENCH" ] || { echo "could not build benches/llm_overhead.rs" >&2; exit 2; }
TMP=$(mktemp -d)
exec 3> >(LLM_BENCH_SERVER=1 "$BENCH" > "$TMP/port")   # the server stops when fd 3 closes
trap 'exec 3>&-; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do grep -q port "$TMP/port" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/^port //p' "$TMP/port")
[ -n "$PORT" ] || { echo "scripted server did not start" >&2; exit 2; }

# A project folder of its own, sharing the pinned trees and their index cache.
mkdir -p "$TMP/root"
cp -r rocqa.toml allowlists question_templates "$TMP/root/"
ln -s "$PWD/rocm_sources" "$TMP/root/rocm_sources"
BIN=$PWD/target/release/rocqa
run() {
  rm -rf "$TMP/root/out"
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" env ROCQA_LLM_URL="http://127.0.0.1:$PORT/v1" \
    "$BIN" --root "$TMP/root" extract --lib "$LIB" --version "$VERSION" --limit "$LIMIT" \
    --no-cache --concurrency "$1" > "$TMP/out" 2>&1 || true
  local n
  # Answers only: the fact entries the run also writes are measured by benches/facts.sh.
  n=$(grep -hv '"generator":"facts"' "$TMP/root/out/$LIB/$VERSION/entries.jsonl" "$TMP/root/out/$LIB/$VERSION/rejects.jsonl" | wc -l)
  read -r wall user sys rss < "$TMP/t"
  printf '  concurrency %-3s %5d answers in %6.2f s = %7.1f answers/s, rocqa CPU %.3f ms/answer, peak RSS %.0f MB\n' \
    "$1" "$n" "$wall" "$(echo "$n / $wall" | bc -l)" "$(echo "($user + $sys) * 1000 / $n" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
}
"$BIN" index --lib "$LIB" --version "$VERSION" > /dev/null   # warm the index cache first
echo "extract overhead, $LIB $VERSION, up to $LIMIT questions, instant scripted endpoint:"
run 1
run 64
