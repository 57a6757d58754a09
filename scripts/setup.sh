#!/usr/bin/env bash
# Sets up a Debian 12 machine for rocqa: system packages, the release build, and the
# real rocBLAS / rocSOLVER source trees (Debian source packages, pinned in
# rocm_sources/sources.toml). Safe to run again: every step is a no-op when done.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
# libclang-15-dev: the precise index (`rocqa index --precise`) parses the units with
# libclang; libfmt-dev: rocSOLVER's sources include <fmt/core.h>.
# tmux: the review UI is tested in a real terminal (tests/review_tui.rs).
for p in ca-certificates debian-archive-keyring apt tar gzip xz-utils git universal-ctags time bc graphviz libclang-15-dev libfmt-dev tmux; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs) first" >&2; exit 2; }
cargo build --release --quiet

# Every configured version of both libraries: rocBLAS 6.4.4 + 5.5.1, rocSOLVER 6.4.3 + 5.5.1.
for lib in rocblas rocsolver; do
  target/release/rocqa sources fetch --lib "$lib"
done

# The bundled local LLM server (default endpoint, end-to-end tests).
scripts/setup-llm.sh
scripts/setup-hip.sh  # ROCm compiler (hipcc, clang-15, device libs) + rocBLAS/rocSOLVER headers for the compile check
