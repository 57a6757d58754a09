#!/usr/bin/env bash
# rocqa's own cost per accepted entry in a full `rocqa extract` run (index load, graphs,
# slices, prompts, HTTP client, validation, JSONL), against an endpoint that answers
# instantly and carefully: the scripted server of benches/llm_overhead.rs with
# LLM_BENCH_ANSWERS=careful (answers that name the cited file and definition, quote a
# statement of the slice and cite its line, so they pass the checks), in its own
# process, so neither the LLM nor its server is counted. CPU time is the rocqa process's
# user + sys (the compiler's child processes included where answers carry code);
# throughput is answers per second of wall time.
#
# Runs: the same job without an endpoint first (index load, facts, slices, fact and
# find-the-bug entries: the fixed part of every run), then answers without code at
# concurrency 64 and 1 (rocqa alone: no compiler), then half the answers carrying a
# HIP kernel at concurrency 64 (compiled in batches). Each answer run prints its CPU
# per accepted entry whole, and that of its answer phase alone (the manifest's
# `answer_cpu_ms`: rocqa's own threads while answers are asked for, checked and
# written, the compiler's processes not counted): what one more answer costs.
#
# usage: benches/extract_overhead.sh [LIB] [VERSION] [LIMIT] [CODE_LIMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-rocblas}
VERSION=${2:-6.4.4}
LIMIT=${3:-1000}
CODE_LIMIT=${4:-200}
cargo build --release --quiet
BENCH=$(cargo bench --bench llm_overhead --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
[ -x "$BENCH" ] || { echo "could not build benches/llm_overhead.rs" >&2; exit 2; }
TMP=$(mktemp -d)
# Two servers: careful answers without code, and with code on half of them. Each stops
# when its fd closes.
exec 3> >(LLM_BENCH_SERVER=1 LLM_BENCH_ANSWERS=careful "$BENCH" > "$TMP/port-prose")
exec 4> >(LLM_BENCH_SERVER=1 LLM_BENCH_ANSWERS=careful LLM_BENCH_CODE=half "$BENCH" > "$TMP/port-code")
trap 'exec 3>&- 4>&-; rm -rf "$TMP"' EXIT
port() {
  for _ in $(seq 50); do grep -q port "$TMP/port-$1" 2>/dev/null && break; sleep 0.1; done
  sed -n 's/^port //p' "$TMP/port-$1"
}
PROSE=$(port prose)
CODE=$(port code)
[ -n "$PROSE" ] && [ -n "$CODE" ] || { echo "scripted servers did not start" >&2; exit 2; }

# A project folder of its own, sharing the pinned trees and their index cache.
mkdir -p "$TMP/root"
cp -r rocqa.toml allowlists question_templates "$TMP/root/"
ln -s "$PWD/rocm_sources" "$TMP/root/rocm_sources"
BIN=$PWD/target/release/rocqa
FIXED_CPU=0
fixed() { # limit: the run with no endpoint
  rm -rf "$TMP/root/out/$LIB"   # out/cache stays: the toolchain probes, as on any rerun
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" env -u ROCQA_LLM_URL \
    "$BIN" --root "$TMP/root" extract --lib "$LIB" --version "$VERSION" --limit "$1" \
    > "$TMP/out" 2>&1 || true
  read -r wall user sys rss < "$TMP/t"
  FIXED_CPU=$(echo "$user + $sys" | bc -l)
  printf '  %-28s %6.2f s wall, CPU %.2f s, peak RSS %.0f MB (facts, slices, fact and find-the-bug entries)\n' \
    "no endpoint (fixed part)" "$wall" "$FIXED_CPU" "$(echo "$rss / 1024" | bc -l)"
}
run() { # port concurrency limit label
  rm -rf "$TMP/root/out/$LIB"   # out/cache stays: the toolchain probes, as on any rerun
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" env ROCQA_LLM_URL="http://127.0.0.1:$1/v1" \
    "$BIN" --root "$TMP/root" extract --lib "$LIB" --version "$VERSION" --limit "$3" \
    --no-cache --concurrency "$2" > "$TMP/out" 2>&1 || true
  local d="$TMP/root/out/$LIB/$VERSION" n kept code
  # Model answers only: the entries written without a model are the fixed part.
  kept=$(grep -c '"generator":"llm"' "$d/entries.jsonl" || true)
  n=$(( kept + $(wc -l < "$d/rejects.jsonl") ))
  code=$(grep '"generator":"llm"' "$d/entries.jsonl" | grep -c '"code":"' || true)
  read -r wall user sys rss < "$TMP/t"
  local answer_ms
  answer_ms=$(sed -n 's/.*"answer_cpu_ms": *\([0-9]*\).*/\1/p' "$d/manifest.json" | head -1)
  printf '  %-28s concurrency %-3s %5d answers, %5d accepted (%d with code) in %6.2f s = %7.1f answers/s, CPU %.3f ms per accepted entry whole, %.3f ms in the answer phase; peak RSS %.0f MB\n' \
    "$4" "$2" "$n" "$kept" "$code" "$wall" "$(echo "$n / $wall" | bc -l)" \
    "$(echo "($user + $sys) * 1000 / ($kept + ($kept == 0))" | bc -l)" \
    "$(echo "${answer_ms:-0} / ($kept + ($kept == 0))" | bc -l)" \
    "$(echo "$rss / 1024" | bc -l)"
  if [ "$kept" -eq 0 ]; then
    echo "  no answer was accepted; reject reasons:" >&2
    grep -o '"reason":"[^"]*"' "$d/rejects.jsonl" | sort | uniq -c >&2
  fi
}
"$BIN" index --lib "$LIB" --version "$VERSION" > /dev/null   # warm the index cache first
# and the toolchain probes (one-time per machine, kept in out/cache/compile.sqlite)
env ROCQA_LLM_URL="http://127.0.0.1:$PROSE/v1" "$BIN" --root "$TMP/root" extract --lib "$LIB" \
  --version "$VERSION" --limit 1 --no-cache > /dev/null 2>&1 || true
echo "extract overhead, $LIB $VERSION, instant scripted endpoint answering carefully:"
fixed "$LIMIT"
run "$PROSE" 64 "$LIMIT" "no code (rocqa alone)"
run "$PROSE" 1 "$LIMIT" "no code (rocqa alone)"
run "$CODE" 64 "$CODE_LIMIT" "half with code (+ compiler)"
