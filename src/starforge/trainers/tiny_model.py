"""Build a tiny Llama-style causal LM (random weights) and its tokenizer from nothing, plus small example datasets.

    sf console runtime run trl-1.10.0 -- -m starforge.trainers.tiny_model OUT_DIR [--data DATA_DIR] [--seed N]

OUT_DIR receives a Hugging Face model folder (`config.json`, weights, tokenizer with a chat template and pad/eos
tokens) written with `save_pretrained`: nothing is downloaded. With `--data`, DATA_DIR receives `sft.jsonl`
(conversations, `messages`), `prompts.jsonl` (GRPO, `prompt`), `preference.jsonl` (DPO, `prompt`/`chosen`/
`rejected`) and a small `*-val.jsonl` of each. Needs torch, transformers and tokenizers (what TRL installs), so it
runs on a TRL runtime's interpreter: `sf console runtime run` starts it there with StarForge importable. It imports
nothing from StarForge, so `python path/to/tiny_model.py` works as well.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

SPECIAL = ["<pad>", "<s>", "</s>", "<unk>", "<|system|>", "<|user|>", "<|assistant|>"]
# one turn per line; the assistant turn ends with the eos token, so a fine-tuned model learns to stop
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] }}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% endif %}{{ '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)
_NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def examples(count: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """Return `count` (question, right answer, wrong answer) triples about single-digit additions."""
    out = []
    for _ in range(count):
        a, b = rng.randrange(5), rng.randrange(5)
        wrong = (a + b + rng.randrange(1, 5)) % 10
        out.append((f"What is {_NUMBERS[a]} plus {_NUMBERS[b]}?", f"It is {_NUMBERS[a + b]}.",
                    f"It is {_NUMBERS[wrong]}."))
    return out


def datasets(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    """Return the example datasets by file name: SFT conversations, GRPO prompts, DPO preference pairs."""
    files: dict[str, list[dict[str, Any]]] = {}
    for suffix, count in (("", 64), ("-val", 8)):
        rows = examples(count, rng)
        files[f"sft{suffix}.jsonl"] = [
            {"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": right}]}
            for q, right, _ in rows
        ]
        files[f"prompts{suffix}.jsonl"] = [{"prompt": q} for q, _, _ in rows]
        files[f"preference{suffix}.jsonl"] = [
            {"prompt": q, "chosen": f" {right}", "rejected": f" {wrong}"} for q, right, wrong in rows
        ]
    return files


def corpus(files: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Return the texts the tokenizer is trained on (every string of every example, plus the digits' names)."""
    texts = [" ".join(_NUMBERS), "It is What plus ?"]
    for rows in files.values():
        for row in rows:
            for value in row.values():
                if isinstance(value, str):
                    texts.append(value)
                else:
                    texts.extend(turn["content"] for turn in value)
    return texts


def build_tokenizer(texts: list[str]) -> Any:
    """Return a byte-level BPE tokenizer trained on `texts`, as a transformers fast tokenizer with a chat template."""
    from tokenizers import (  # type: ignore[import-not-found,unused-ignore]
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast  # type: ignore[import-not-found,unused-ignore]

    core = Tokenizer(models.BPE(unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=384, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    core.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<s>",
                                        eos_token="</s>", unk_token="<unk>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_model(tokenizer: Any, seed: int) -> Any:
    """Return a randomly initialised two-layer Llama-style causal LM sized for `tokenizer` (a few hundred K weights)."""
    import torch  # type: ignore[import-not-found,unused-ignore]
    from transformers import LlamaConfig, LlamaForCausalLM  # type: ignore[import-not-found,unused-ignore]

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=96, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write `rows` as JSON lines."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Build the model into OUT_DIR and, with --data, the datasets into DATA_DIR; print what was written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--data", type=Path, default=None, help="also write example datasets into this folder")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    files = datasets(rng)
    tokenizer = build_tokenizer(corpus(files))
    model = build_model(tokenizer, args.seed)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out_dir)
    tokenizer.save_pretrained(args.out_dir)
    for path in args.out_dir.iterdir():  # safetensors writes 0600: jobs run as their own uid and must read it
        path.chmod(0o644)
    weights = sum(p.numel() for p in model.parameters())
    print(f"model: {args.out_dir} ({weights} parameters, vocabulary {len(tokenizer)})")
    if args.data is not None:
        args.data.mkdir(parents=True, exist_ok=True)
        for name, rows in files.items():
            write_jsonl(args.data / name, rows)
        print(f"data: {args.data} ({', '.join(sorted(files))})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
