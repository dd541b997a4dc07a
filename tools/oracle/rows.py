"""The oracle's grid: the plans whose memory the oracle measures.

Real model widths from the Hub configs of the presets' families, with the depth cut to a
few decoder layers (the planner is given the same shape, so each row is still a real
PyTorch step; a few rows keep a whole model's depth). Around one base plan per family and
sharding, every setting varies one at a time; then a seeded sample of combinations.
Regenerating the table gives the same rows (`./dev oracle`)."""

import random

# Each family's widths as its Hugging Face config.json gives them.
FAMILIES = {
    "llama-3.2-1b": dict(
        model_type="llama",
        vocab_size=128256,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=4,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=64,
        tie_word_embeddings=True,
    ),
    "llama-3.1-8b": dict(
        model_type="llama",
        vocab_size=128256,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=2,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=False,
    ),
    "qwen2.5-7b": dict(
        model_type="qwen2",
        vocab_size=152064,
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=2,
        num_attention_heads=28,
        num_key_value_heads=4,
        tie_word_embeddings=False,
    ),
    "qwen3-1.7b": dict(
        model_type="qwen3",
        vocab_size=151936,
        hidden_size=2048,
        intermediate_size=6144,
        num_hidden_layers=4,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=True,
    ),
    "mistral-7b": dict(
        model_type="mistral",
        vocab_size=32768,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=2,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=False,
        sliding_window=None,
    ),
    "gemma-2-2b": dict(
        model_type="gemma2",
        vocab_size=256000,
        hidden_size=2304,
        intermediate_size=9216,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=256,
        tie_word_embeddings=True,
        final_logit_softcapping=None,
        attn_logit_softcapping=None,
    ),
}

# (name, world size, plan keys)
SHARDINGS = [
    ("single", 1, dict(zero=0)),
    ("zero3", 8, dict(zero=3)),
    ("zero2", 8, dict(zero=2)),
    ("lora", 1, dict(zero=0, train="lora", lora_rank=16)),
    ("lora", 8, dict(zero=3, train="lora", lora_rank=16)),
]

# One setting at a time, away from the base plan.
VARIATIONS = [
    dict(),
    dict(precision="bf16-pure"),
    dict(precision="fp32"),
    dict(ckpt="full"),
    dict(ckpt="selective"),
    dict(ckpt="op"),
    dict(attn="eager"),
    dict(loss="fused"),
    dict(optimizer="adamw-foreach"),
    dict(seq=4096),
    dict(mb=2),
    # Gradient accumulation: the earlier micro-batches' gradients live through the last one's.
    dict(ga=8),
]

WORLDS = [2, 4, 16, 64]

# What CI runs (./dev test): one row of each sharding and checkpointing kind.
SMOKE = {
    "llama-3.2-1b/single/base",
    "llama-3.2-1b/zero3/base",
    "llama-3.2-1b/single/ga=8",
    "llama-3.1-8b/zero3/ckpt=full",
    "qwen3-1.7b/zero2/base",
    "mistral-7b/lora/world=1,base",
    "gemma-2-2b/zero3/attn=eager",
    "llama-3.1-70b/zero3/80-layers,world=16,seq=8192,ckpt=full",
    "llama-3.2-1b/zero3/stage=dpo",
    "llama-3.2-1b/lora/world=1,stage=dpo",
    "llama-3.2-1b/zero3/stage=grpo,completion=256",
}


def plan(**kw):
    base = dict(
        seq=2048,
        mb=1,
        ga=1,
        precision="bf16",
        ckpt="none",
        attn="flash",
        loss="plain",
        optimizer="adamw",
        train="full",
        zero=0,
    )
    base.update(kw)
    return base


def row(family, sharding, world, keys, name):
    p = plan(**keys)
    if p["train"] != "full" and p["precision"] == "fp32":
        return None
    if p["train"] != "full":
        name = f"world={world}," + name
    return dict(
        id=f"{family}/{sharding}/{name}",
        group=sharding,
        config=FAMILIES[family],
        world=world,
        plan=p,
    )


def label(variation):
    return ",".join(f"{k}={v}" for k, v in variation.items()) or "base"


def one_at_a_time():
    for family in FAMILIES:
        for sharding, world, keys in SHARDINGS:
            for v in VARIATIONS:
                r = row(family, sharding, world, {**keys, **v}, label(v))
                if r:
                    yield r
            if sharding.startswith("zero"):
                for w in WORLDS:
                    yield row(family, sharding, w, keys, f"world={w}")


def combinations(n=90, seed=12):
    """Seeded combinations of every axis, ZeRO-3 and ZeRO-2 at world sizes 2 to 64."""
    rng = random.Random(seed)
    families = sorted(FAMILIES)
    for i in range(n):
        family = rng.choice(families)
        zero = rng.choice([2, 3, 3])
        world = rng.choice([2, 8, 32, 64])
        keys = dict(
            zero=zero,
            precision=rng.choice(["bf16", "bf16", "bf16-pure", "fp32"]),
            ckpt=rng.choice(["none", "full", "full", "selective", "op"]),
            attn=rng.choice(["flash", "flash", "eager"]),
            loss=rng.choice(["plain", "fused"]),
            optimizer=rng.choice(["adamw", "adamw-foreach"]),
            seq=rng.choice([1024, 2048, 4096, 8192]),
            mb=rng.choice([1, 2]),
        )
        if keys["attn"] == "eager" and keys["seq"] * keys["mb"] > 4096:
            keys["seq"] = 2048
        yield row(family, f"zero{zero}", world, keys, f"mix{i}")


def whole_models():
    """A few plans at a whole model's depth (Llama-3.2-1B's 16 layers)."""
    deep = dict(FAMILIES["llama-3.2-1b"], num_hidden_layers=16)
    for name, world, keys in [
        ("zero3", 8, dict(zero=3)),
        ("zero3", 8, dict(zero=3, ckpt="full")),
        ("zero2", 8, dict(zero=2, ckpt="full")),
        ("single", 1, dict(ckpt="full")),
        ("single", 1, dict(precision="bf16-pure")),
    ]:
        r = row(
            "llama-3.2-1b",
            name,
            world,
            keys,
            "16-layers," + label({k: v for k, v in keys.items() if k != "zero"}),
        )
        r["config"] = deep
        yield r


# The presets' real shapes, whole depth (#39): what users plan, not a few layers of it.
REAL_SHAPES = {
    "llama-3.1-8b": dict(FAMILIES["llama-3.1-8b"], num_hidden_layers=32),
    "qwen2.5-7b": dict(FAMILIES["qwen2.5-7b"], num_hidden_layers=28),
    "mistral-7b": dict(FAMILIES["mistral-7b"], num_hidden_layers=32),
    "qwen3-1.7b": dict(FAMILIES["qwen3-1.7b"], num_hidden_layers=28),
    "gemma-2-2b": dict(FAMILIES["gemma-2-2b"], num_hidden_layers=26),
    # Held out only: Gemma 3 (QK norm, 1024-token windows on 5 layers of 6, 262K vocabulary).
    "gemma-3-27b": dict(
        model_type="gemma3_text",
        vocab_size=262208,
        hidden_size=5376,
        intermediate_size=21504,
        num_hidden_layers=62,
        num_attention_heads=32,
        num_key_value_heads=16,
        head_dim=128,
        tie_word_embeddings=True,
        sliding_window=1024,
        query_pre_attn_scalar=168,
    ),
    "llama-3.1-70b": dict(
        model_type="llama",
        vocab_size=128256,
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=False,
    ),
    "llama-3.1-405b": dict(
        model_type="llama",
        vocab_size=128256,
        hidden_size=16384,
        intermediate_size=53248,
        num_hidden_layers=126,
        num_attention_heads=128,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=False,
    ),
}


def real_sizes():
    """Whole models at the presets' real shapes, in the layouts the export runs: the page's
    landing plan (Llama-3.1-8B, ZeRO-3 on 8 GPUs at 8K tokens, 8 micro-batches a step), 70B on 16 and 64 ranks,
    405B on 64, LoRA, one GPU, ZeRO-2, and sequences to 32K."""
    plans = [
        ("llama-3.1-8b", "zero3", 8, dict(zero=3, seq=8192)),
        ("llama-3.1-8b", "zero3", 8, dict(zero=3, seq=8192, ga=8)),
        ("llama-3.1-8b", "zero3", 8, dict(zero=3, seq=8192, ckpt="full")),
        ("llama-3.1-8b", "zero3", 8, dict(zero=3, seq=32768, ckpt="full")),
        ("llama-3.1-8b", "zero2", 8, dict(zero=2, seq=4096, ckpt="full")),
        ("llama-3.1-8b", "single", 1, dict(zero=0, seq=4096, ckpt="full")),
        ("llama-3.1-8b", "lora", 1, dict(zero=0, train="lora", lora_rank=16, seq=4096)),
        ("llama-3.1-8b", "lora", 8, dict(zero=3, train="lora", lora_rank=16, seq=8192)),
        ("qwen2.5-7b", "zero3", 8, dict(zero=3, seq=8192, ckpt="full")),
        ("mistral-7b", "zero2", 8, dict(zero=2, seq=4096)),
        ("qwen3-1.7b", "single", 1, dict(zero=0, seq=8192)),
        ("gemma-2-2b", "zero3", 8, dict(zero=3, seq=8192, ckpt="full")),
        ("llama-3.1-70b", "zero3", 16, dict(zero=3, seq=8192, ckpt="full")),
        ("llama-3.1-70b", "zero3", 64, dict(zero=3, seq=8192, ckpt="full")),
        (
            "llama-3.1-70b",
            "lora",
            8,
            dict(zero=3, train="lora", lora_rank=16, seq=4096, ckpt="full"),
        ),
        ("llama-3.1-405b", "zero3", 64, dict(zero=3, seq=8192, ckpt="full")),
    ]
    for p in plans:
        yield whole_model(*p)


def is_whole_model(row_id):
    """A row of `whole_model`: its name carries the depth and the world."""
    return "-layers,world=" in row_id


def whole_model(family, sharding, world, keys, prefix=""):
    """A row of a preset's whole model, named by its depth, world and settings."""
    config = REAL_SHAPES[family]
    shown = {k: v for k, v in keys.items() if k != "zero"}
    name = f"{config['num_hidden_layers']}-layers,world={world}," + label(shown)
    return dict(
        id=f"{prefix}{family}/{sharding}/{name}",
        group=sharding,
        config=config,
        world=world,
        plan=plan(**keys),
    )


def lora_targets():
    """LoRA on q and v (PEFT's default for these families) and on the attention projections,
    beside the grid's all-linear rows (#38): one GPU and ZeRO-3 on 8, with and without
    checkpointing, and in pure BF16."""
    for family in FAMILIES:
        for sharding, world, keys in [s for s in SHARDINGS if s[0] == "lora"]:
            for targets in ("q,v", "attention"):
                for v in [dict(), dict(ckpt="full"), dict(precision="bf16-pure")]:
                    yield row(
                        family,
                        sharding,
                        world,
                        {**keys, "lora_targets": targets, **v},
                        label({"lora_targets": targets, **v}),
                    )
            # Adapters in the base's BF16 (PEFT's autocast_adapter_dtype=False).
            for v in [
                dict(),
                dict(ckpt="full"),
                dict(precision="bf16-pure"),
                dict(lora_targets="q,v"),
            ]:
                yield row(
                    family,
                    sharding,
                    world,
                    {**keys, "lora_dtype": "bf16", **v},
                    label({"lora_dtype": "bf16", **v}),
                )


def tensor_parallel():
    """train.py's tensor parallelism under FSDP2 (#37): Llama-style families, TP 2-8 inside a
    node of 8, with and without sequence parallelism, one setting at a time, a tied embedding
    (Llama-3.2-1B) and a whole 70B at 32K tokens on 16 and 64 ranks; 8 micro-batches a step."""
    base = dict(zero=3, tp=2, sp=1)
    for family, world in [
        ("llama-3.1-8b", 8),
        ("qwen2.5-7b", 8),
        ("mistral-7b", 16),
        ("llama-3.2-1b", 8),
    ]:
        for v in [
            dict(),
            dict(sp=0),
            dict(ckpt="full"),
            dict(loss="fused"),
            dict(tp=4),
            dict(ga=8),
        ]:
            yield row(family, "tp", world, {**base, **v}, label(v))
    for v in [
        dict(zero=2),
        dict(ckpt="op"),
        dict(ckpt="selective"),
        dict(seq=8192),
        dict(mb=2),
        dict(tp=8),
        dict(precision="fp32"),
        dict(sp=0, loss="fused", ckpt="full"),
    ]:
        yield row("llama-3.1-8b", "tp", 8, {**base, **v}, label(v))
    for world in (16, 64):
        yield whole_model(
            "llama-3.1-70b", "tp", world, dict(zero=3, tp=8, sp=1, seq=32768, ckpt="full")
        )


def dpo():
    """DPO (#38): both rows of each pair in one batch, the reference's forward first, a frozen
    BF16 copy (sharded by FSDP2 beside the policy) or, under LoRA, the base with its adapters
    off; one GPU, ZeRO-3 and ZeRO-2 on 8 ranks and LoRA, with and without checkpointing and the
    fused loss. Counted in their own group (`stage=dpo`)."""
    shardings = [
        ("single", 1, dict(zero=0)),
        ("zero3", 8, dict(zero=3)),
        ("zero2", 8, dict(zero=2)),
        ("lora", 1, dict(zero=0, train="lora", lora_rank=16)),
        ("lora", 8, dict(zero=3, train="lora", lora_rank=16)),
    ]
    for family in ("llama-3.2-1b", "llama-3.1-8b", "qwen2.5-7b"):
        more = (
            [dict(mb=2, seq=1024), dict(precision="fp32"), dict(ga=8)]
            if family == "llama-3.2-1b"
            else []
        )
        for sharding, world, keys in shardings:
            for v in [dict(), dict(ckpt="full"), dict(loss="fused", ckpt="full"), *more]:
                r = row(
                    family,
                    sharding,
                    world,
                    {**keys, "stage": "dpo", **v},
                    label({"stage": "dpo", **v}),
                )
                if r:
                    r["group"] = "dpo"
                    yield r
    # Whole models at the presets' real depth: full training under FSDP2 and LoRA on one GPU.
    yield whole_model("llama-3.1-8b", "dpo", 8, dict(zero=3, stage="dpo", seq=4096, ckpt="full"))
    yield whole_model(
        "qwen2.5-7b",
        "dpo",
        1,
        dict(zero=0, train="lora", lora_rank=16, stage="dpo", seq=2048, ckpt="full"),
    )


def grpo():
    """GRPO's update (#38): TRL's loss over the logits of the completion's C + 1 positions,
    upcast to fp32 and divided by the temperature, on train.py's model and sharding; one GPU,
    ZeRO-3 on 8 ranks and LoRA, completions of 256 and 1,024 tokens of 2,048-token rows, with
    and without checkpointing. Counted in their own group (`stage=grpo`); vLLM's share is a
    setting beside it, not counted."""
    shardings = [
        ("single", 1, dict(zero=0)),
        ("zero3", 8, dict(zero=3)),
        ("lora", 1, dict(zero=0, train="lora", lora_rank=16)),
    ]
    for family in ("llama-3.2-1b", "qwen2.5-7b"):
        more = [dict(completion=256, ga=8)] if family == "llama-3.2-1b" else []
        for sharding, world, keys in shardings:
            for v in [
                dict(completion=256),
                dict(completion=1024, ckpt="full"),
                dict(completion=1024, mb=2),
                *more,
            ]:
                r = row(
                    family,
                    sharding,
                    world,
                    {**keys, "stage": "grpo", **v},
                    label({"stage": "grpo", **v}),
                )
                if r:
                    r["group"] = "grpo"
                    yield r


def rows():
    return [
        r
        for r in [
            *one_at_a_time(),
            *combinations(),
            *whole_models(),
            *real_sizes(),
            *tensor_parallel(),
            *lora_targets(),
            *dpo(),
            *grpo(),
        ]
        if r
    ]


# Held out (#25): shapes and settings the planner's memory model was never changed on, measured
# after it was, so their error is out of sample. Families the grid above lacks (OLMo 2's full
# q/k norms and untied 100K vocabulary, Qwen2.5-0.5B's 896 width and 2 KV heads, Llama-3.2-3B's
# 3072 width), sequence lengths and micro-batches it never used, and 128 ranks.
HELDOUT_FAMILIES = {
    "olmo-2-7b": dict(
        model_type="olmo2",
        vocab_size=100352,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=2,
        num_attention_heads=32,
        num_key_value_heads=32,
        tie_word_embeddings=False,
    ),
    "qwen2.5-0.5b": dict(
        model_type="qwen2",
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=4,
        num_attention_heads=14,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    ),
    "llama-3.2-3b": dict(
        model_type="llama",
        vocab_size=128256,
        hidden_size=3072,
        intermediate_size=8192,
        num_hidden_layers=3,
        num_attention_heads=24,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=True,
    ),
}


def heldout(n=45, seed=25):
    """Seeded plans over the held-out families: one GPU, ZeRO-2/3 and LoRA, at new sequence
    lengths (1536, 3072, 6144), micro-batches (1-3) and world sizes (up to 128)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        family = sorted(HELDOUT_FAMILIES)[i % len(HELDOUT_FAMILIES)]
        sharding, world, keys = rng.choice(
            [
                ("single", 1, dict(zero=0)),
                ("zero3", rng.choice([4, 8, 128]), dict(zero=3)),
                ("zero2", rng.choice([2, 8, 128]), dict(zero=2)),
                (
                    "lora",
                    rng.choice([1, 8]),
                    dict(zero=3, train="lora", lora_rank=rng.choice([8, 32])),
                ),
            ]
        )
        keys = dict(
            keys,
            precision=rng.choice(["bf16", "bf16", "bf16-pure", "fp32"]),
            ckpt=rng.choice(["none", "full", "selective", "op"]),
            attn=rng.choice(["flash", "flash", "eager"]),
            loss=rng.choice(["plain", "fused"]),
            optimizer=rng.choice(["adamw", "adamw-foreach"]),
            seq=rng.choice([1536, 3072, 6144]),
            mb=rng.choice([1, 2, 3]),
        )
        if keys.get("train") == "lora" and world == 1:
            keys["zero"] = 0
        if keys["attn"] == "eager" and keys["seq"] * keys["mb"] > 6144:
            keys["seq"] = 1536
        p = plan(**keys)
        if p["train"] != "full" and p["precision"] == "fp32":
            p["precision"] = "bf16"
        out.append(
            dict(
                id=f"heldout/{family}/{sharding}/h{i}",
                group=sharding,
                config=HELDOUT_FAMILIES[family],
                world=world,
                plan=p,
            )
        )
    return out + list(real_size_heldout())


def real_size_heldout():
    """Whole models at real shapes the memory model was never changed on (#39): new
    sequence lengths, world sizes and checkpointing for the presets' shapes, and a family
    the table lacks (Gemma 3, which the ZeRO-3 group's envelope counts)."""
    plans = [
        ("qwen2.5-7b", "zero2", 16, dict(zero=2, seq=16384, ckpt="full")),
        ("llama-3.1-8b", "zero3", 32, dict(zero=3, seq=16384, ckpt="selective")),
        ("mistral-7b", "lora", 8, dict(zero=3, train="lora", lora_rank=32, seq=8192, ckpt="full")),
        ("llama-3.1-70b", "zero3", 32, dict(zero=3, seq=4096, ckpt="full", mb=2)),
        ("gemma-3-27b", "zero3", 8, dict(zero=3, seq=4096)),
    ]
    for p in plans:
        yield whole_model(*p, prefix="heldout/")


def reproductions():
    """The measured single-GPU steps of data/memory_examples.csv (cuDNN/efficient SDPA and
    eager; the math backend has no CPU twin), as oracle rows: how close the oracle's CPU
    kernels come to those CUDA counts."""
    import csv
    import os

    path = os.path.join(
        os.path.dirname(__file__), "..", "..", "crates", "planner", "data", "memory_examples.csv"
    )
    out = []
    with open(path) as f:
        for i, r in enumerate(csv.DictReader(f)):
            if r["attn"] == "math":
                continue
            cfg = dict(
                model_type="llama",
                vocab_size=int(r["vocab"]),
                hidden_size=int(r["hidden"]),
                intermediate_size=int(r["intermediate"]),
                num_hidden_layers=int(r["layers"]),
                num_attention_heads=int(r["heads"]),
                num_key_value_heads=int(r["kv_heads"]),
                tie_word_embeddings=r["tied"] == "1",
            )
            p = plan(
                seq=int(r["s"]),
                mb=int(r["b"]),
                precision={"mixed": "bf16", "bf16": "bf16-pure", "fp32": "fp32"}[r["precision"]],
                ckpt="full" if r["ac"] == "1" else "none",
                attn="eager" if r["attn"] == "eager" else "flash",
                optimizer="adamw-foreach" if r["optim"] == "adamw_foreach" else "adamw",
            )
            out.append(
                dict(
                    id=f"csv{i + 2}",
                    group="memory_examples.csv",
                    config=cfg,
                    world=1,
                    plan=p,
                    measured=int(r["peak_bytes"]),
                )
            )
    return out
