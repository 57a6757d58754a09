#!/usr/bin/env bash
# The precise (libclang) index against the fast one on the same tree, measured in the
# same run: cold fast index, cold precise index (every unit parsed), warm precise
# index (all units from its cache), then `rocqa graph --compare` over the in-scope
# families (both indexes warm), whose totals are the agreement figures.
#
# usage: benches/precise_vs_fast.sh [LIB] [VERSION] [FAMILY]
#   FAMILY: only that family's units and edges (a sample, said so in the output).
# Needs: the tree fetched (rocqa sources fetch), libclang-15 and the HIP headers
# (scripts/setup.sh), GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-rocblas}
VERSION=${2:-6.4.4}
FAMILY=${3:-}
TREE=rocm_sources/$LIB-$VERSION
[ -d "$TREE/library" ] || { echo "no tree at $TREE: run rocqa sources fetch --lib $LIB --version $VERSION" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time missing: apt-get install time" >&2; exit 2; }
cargo build --release --quiet
BIN=target/release/rocqa
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
CACHE=rocm_sources/.cache/$LIB-$VERSION

# One measurement: prints "seconds max_rss_kb".
measure() { /usr/bin/time -f "%e %M" -o "$TMP/t" "$@" > "$TMP/out" 2>&1 || { cat "$TMP/out" >&2; exit 1; }; cat "$TMP/t"; }

read -r FAST FAST_RSS < <(measure "$BIN" index --lib "$LIB" --version "$VERSION" --no-cache)
rm -f "$CACHE/precise.bin"
if [ -n "$FAMILY" ]; then
  read -r PCOLD PCOLD_RSS < <(measure "$BIN" graph --lib "$LIB" --version "$VERSION" --compare --family "$FAMILY" --format json)
  read -r PWARM _ < <(measure "$BIN" graph --lib "$LIB" --version "$VERSION" --compare --family "$FAMILY" --format json)
  SCOPE="family $FAMILY only (its units)"
else
  read -r PCOLD PCOLD_RSS < <(measure "$BIN" index --lib "$LIB" --version "$VERSION" --precise --json)
  read -r PWARM _ < <(measure "$BIN" index --lib "$LIB" --version "$VERSION" --precise --json)
  "$BIN" graph --lib "$LIB" --version "$VERSION" --compare --format json > "$TMP/out"
  SCOPE="whole library"
fi
"$BIN" graph --lib "$LIB" --version "$VERSION" --compare ${FAMILY:+--family "$FAMILY"} --format json > "$TMP/cmp"
python3 - "$TMP/cmp" "$LIB $VERSION, $SCOPE, $(nproc) cores" "$FAST" "$FAST_RSS" "$PCOLD" "$PCOLD_RSS" "$PWARM" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
what, fast, frss, cold, crss, warm = sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
p, k = c["precise"], c["comparison"]
print(f"{what}:")
print(f"  fast index, cold                  {fast:8.2f} s   peak RSS {frss/1024:6.0f} MB")
print(f"  precise index, cold               {cold:8.2f} s   peak RSS {crss/1024:6.0f} MB   {cold/fast:.0f}x the fast index")
print(f"  precise index, warm (cache)       {warm:8.2f} s")
print(f"  units: {p['selected']} of {p['units']}: {p['clean']} clean, {p['with_errors']} with errors (kept), {p['failed']} failed ({p['degraded_files']} files from the fast index)")
print(f"  calls: {p['calls']} ({p['resolved_calls']} resolved to one declaration), launches: {p['launches']}")
print(f"  edges over {len(k['families'])} in-scope families: both {k['both']}, fast only {k['fast_only']}, precise only {k['precise_only']}: agreement {k['agreement']:.1f}%")
worst = sorted(k["families"], key=lambda f: (f["both"] / max(1, f["both"] + len(f["fast_only"]) + len(f["precise_only"]))))[:5]
for f in worst:
    n = f["both"] + len(f["fast_only"]) + len(f["precise_only"])
    print(f"    {f['family']:<24} both {f['both']:4}  fast only {len(f['fast_only']):4}  precise only {len(f['precise_only']):4}  ({100*f['both']/max(1,n):.1f}%)")
PY
