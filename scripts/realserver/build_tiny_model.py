"""Build a tiny random-weight Llama that vLLM (CPU) can serve, from local files only.

No model can be downloaded on the machines lanemon is tested on, and a test lane
does not need a good model: it needs a real engine's wire formats, batching,
prefix caching and /metrics.  So this script makes one:

* a byte-level BPE tokenizer trained with the ``tokenizers`` library on local
  text (the Python standard library's sources and /usr/share/common-licenses),
  with ChatML markers and ``<tool_call>`` / ``</tool_call>`` as special tokens
  (vLLM's hermes tool parser looks them up in the vocabulary);
* a chat template (ChatML with a hermes-style tool section);
* a ``LlamaForCausalLM`` with random weights (fixed seed): 2 layers, hidden 128,
  4 heads of 32 (vLLM's CPU attention does not support head_dim 16), 4,096
  positions, float32.

Its text is gibberish.  Run it with the Python of the vLLM venv (it needs
``torch``, ``transformers`` and ``tokenizers``)::

    python build_tiny_model.py OUT_DIR

It does nothing when OUT_DIR already holds a model built by this version.
"""

from __future__ import annotations

import argparse
import json
import sys
import sysconfig
from pathlib import Path

VERSION = "1"  # bump when the recipe changes: a cached model of another version is rebuilt
VOCAB = 2048
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]

CHAT_TEMPLATE = (
    "{%- if tools %}"
    "<|im_start|>system\n"
    "{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{%- endif %}"
    "You may call one or more functions. Function signatures are inside <tools></tools>:\n<tools>"
    "{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}\n</tools>\n"
    "For each call return JSON with the function name and arguments inside <tool_call></tool_call>.<|im_end|>\n"
    "{%- elif messages[0]['role'] == 'system' %}"
    "<|im_start|>system\n{{ messages[0]['content'] }}<|im_end|>\n"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' %}"
    "{%- elif message['role'] == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ message['content'] }}\n</tool_response><|im_end|>\n"
    "{%- elif message['role'] == 'assistant' and message.get('tool_calls') %}"
    "<|im_start|>assistant\n{%- if message['content'] %}{{ message['content'] }}{%- endif %}"
    "{%- for tc in message['tool_calls'] %}\n<tool_call>\n"
    "{\"name\": \"{{ tc['function']['name'] }}\", \"arguments\": "
    "{%- if tc['function']['arguments'] is string %}{{ tc['function']['arguments'] }}"
    "{%- else %}{{ tc['function']['arguments'] | tojson }}{%- endif %}}\n</tool_call>"
    "{%- endfor %}<|im_end|>\n"
    "{%- else %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{%- if message['content'] is string %}{{ message['content'] }}"
    "{%- else %}{%- for part in message['content'] %}{%- if part['type'] == 'text' %}{{ part['text'] }}"
    "{%- endif %}{%- endfor %}{%- endif %}<|im_end|>\n"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def corpus_files(limit_bytes: int = 6_000_000) -> list[str]:
    """Local text to train the tokenizer on (deterministic order, bounded size)."""
    roots = [Path("/usr/share/common-licenses"), Path(sysconfig.get_paths()["stdlib"])]
    files: list[str] = []
    total = 0
    for root in roots:
        if not root.is_dir():
            continue
        pattern = "*" if root.name == "common-licenses" else "*.py"
        for p in sorted(root.glob(pattern)):
            if not p.is_file():
                continue
            size = p.stat().st_size
            if total + size > limit_bytes:
                continue
            files.append(str(p))
            total += size
    if not files:
        raise SystemExit("build_tiny_model: no local text found to train the tokenizer on")
    return files


def build(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train(corpus_files(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None, additional_special_tokens=SPECIAL[1:],
                                   model_max_length=4096)
    fast.chat_template = CHAT_TEMPLATE
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)

    torch.manual_seed(0)
    eos = fast.convert_tokens_to_ids("<|im_end|>")
    pad = fast.convert_tokens_to_ids("<|endoftext|>")
    config = LlamaConfig(vocab_size=len(fast), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, head_dim=32,
                         max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=True,
                         bos_token_id=pad, eos_token_id=eos, pad_token_id=pad, torch_dtype="float32")
    model = LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    (out / "lanemon-tiny.json").write_text(json.dumps({"version": VERSION, "vocab": len(fast),
                                                        "note": "random weights: the text is gibberish"}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="directory to write the model and tokenizer to")
    args = ap.parse_args(argv)
    stamp = args.out / "lanemon-tiny.json"
    if stamp.exists():
        try:
            if json.loads(stamp.read_text()).get("version") == VERSION:
                print(f"build_tiny_model: {args.out} is up to date")
                return 0
        except (OSError, ValueError):
            pass
    build(args.out)
    print(f"build_tiny_model: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
