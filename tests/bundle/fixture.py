"""A tiny model and data set for running the bundle's train.py on CPU, with no download.

make(root, family) writes root/<family>/ (config, random weights, a word-level
tokenizer) and root/data/train.jsonl, and returns both paths; make_pairs(root)
writes DPO preference pairs in root/pairs/; make_prompts(root) GRPO prompts in root/prompts/.
"""

import json
import os

WORDS = (
    "the of and to in is was for on that with as by at from his her an it were are which this be "
    "gpu memory step token batch shard layer loss model train plan fits cost hour node"
).split()


def tokenizer(path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(path)
    return len(vocab)


def config(family, vocab):
    from transformers import LlamaConfig, MixtralConfig

    shape = dict(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
    )
    if family == "mixtral":
        return MixtralConfig(num_local_experts=4, num_experts_per_tok=2, **shape)
    return LlamaConfig(**shape)


def make(root, family="llama"):
    import torch
    from transformers import AutoModelForCausalLM

    model_dir = os.path.join(root, family)
    if not os.path.exists(os.path.join(model_dir, "config.json")):
        torch.manual_seed(0)
        vocab = tokenizer(model_dir)
        model = AutoModelForCausalLM.from_config(config(family, vocab))
        model.save_pretrained(model_dir)
    data_dir = os.path.join(root, "data")
    os.makedirs(data_dir, exist_ok=True)
    with open(os.path.join(data_dir, "train.jsonl"), "w") as f:
        for i in range(64):
            words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(40 + i % 9)]
            f.write(json.dumps({"text": " ".join(words)}) + "\n")
    return model_dir, data_dir


def make_pairs(root, count=32):
    """root/pairs/train.jsonl: DPO preference pairs (TRL's prompt, chosen, rejected)."""
    pairs_dir = os.path.join(root, "pairs")
    os.makedirs(pairs_dir, exist_ok=True)
    with open(os.path.join(pairs_dir, "train.jsonl"), "w") as f:
        for i in range(count):
            prompt, chosen, rejected = (
                " ".join(WORDS[(i * k + j) % len(WORDS)] for j in range(n + i % 5))
                for k, n in ((5, 6), (3, 8), (11, 5))
            )
            f.write(json.dumps({"prompt": prompt, "chosen": chosen, "rejected": rejected}) + "\n")
    return pairs_dir


def make_prompts(root, count=16):
    """root/prompts/train.jsonl: GRPO prompts, each with an `answer` the default reward looks for."""
    prompts_dir = os.path.join(root, "prompts")
    os.makedirs(prompts_dir, exist_ok=True)
    with open(os.path.join(prompts_dir, "train.jsonl"), "w") as f:
        for i in range(count):
            prompt = " ".join(WORDS[(i * 3 + j) % len(WORDS)] for j in range(5 + i % 4))
            f.write(json.dumps({"prompt": prompt, "answer": WORDS[i % len(WORDS)]}) + "\n")
    return prompts_dir
