#!/usr/bin/env bash
# Start the test vLLM on loopback: the tiny random-weight Llama, CPU, prefix caching, hermes tool parser.
#
#   scripts/realserver/vllm.sh [PORT] [extra vLLM flags...]     # default port 8000
#
# Installs it first when needed (scripts/realserver/install_vllm.sh).  Then point lanemon at
# http://127.0.0.1:PORT/v1.  First start takes about 100 s (compilation), later ones about 40 s.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
home="${LANEMON_VLLM_HOME:-$HOME/.cache/lanemon-vllm}"
port="${1:-8000}"
[ $# -gt 0 ] && shift
if [ ! -x "$home/venv/bin/python" ] || [ ! -f "$home/model/lanemon-tiny.json" ]; then
  "$here/install_vllm.sh"
fi
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$home/venv/bin/python" -m vllm.entrypoints.openai.api_server \
  --model "$home/model" --served-model-name lanemon-tiny \
  --host 127.0.0.1 --port "$port" \
  --dtype float32 --max-model-len 4096 \
  --enable-prefix-caching --enable-prompt-tokens-details \
  --num-gpu-blocks-override 64 \
  --enable-auto-tool-choice --tool-call-parser hermes \
  "$@"
