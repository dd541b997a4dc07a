#!/usr/bin/env python3
"""Megatron-Bridge pre-training and LoRA fine-tuning launcher of a Train Planner bundle.

Every setting the planner assumed is in `megatron_bridge_plan.json` beside
this file, grouped by the configuration class that takes it:

  model            Megatron-Core's TransformerConfig (MLATransformerConfig for
                   multi-latent attention): shape, parallelism, recomputation,
                   MoE, offloading
  provider         Megatron-Bridge's GPTModelProvider beyond TransformerConfig
                   (sequence, vocabulary, embeddings)
  mixed_precision  Megatron-Bridge's MixedPrecisionConfig (BF16, FP8, FP4),
                   which it applies to the model, optimizer and DDP configs
  model_precision  the same precision in TransformerConfig's names (--check)
  optimizer        Megatron-Core's OptimizerConfig
  ddp              Megatron-Core's DistributedDataParallelConfig
  train            Megatron-Bridge's TrainingConfig (micro and global batch)
  dataset          Megatron-Bridge's GPTDatasetConfig (sequence length)
  comm_overlap     Megatron-Bridge's CommOverlapConfig (tensor-parallel overlap)
  peft             LoRA (None for full training): Megatron-Bridge's LoRA on the
                   fused linear_qkv / linear_fc1, or CanonicalLoRA where q, k,
                   v, gate and up are adapted one by one; rank, alpha, dropout
  hf_model         the Hugging Face weights a LoRA plan starts from

Run it in the NeMo Framework container (which ships Megatron-Bridge):

  torchrun --nproc_per_node 8 pretrain_megatron_bridge.py --data_dir DIR
  python pretrain_megatron_bridge.py --check    # no GPU: validate the settings

A LoRA plan fine-tunes a pretrained checkpoint in Megatron's format: pass it
with --pretrained_checkpoint (or the `pretrained` channel), or the launcher
converts `hf_model` once with Megatron-Bridge's AutoBridge before training
(local rank 0 of each node; the others wait for it).

`--check` builds Megatron-Core's own configuration objects from the plan (their
constructors validate the parallel layout, recomputation and precision) and
stops at the first setting they refuse. It needs only `megatron-core` and
PyTorch, so CI runs it on a CPU.
"""

import argparse
import dataclasses
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PLAN_FILE = os.path.join(HERE, "megatron_bridge_plan.json")
# Settings that name a Python object rather than a value.
CALLABLES = ("activation_func",)


def load_plan(path=PLAN_FILE):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def resolve(values):
    """JSON values as the configuration classes take them: "torch.bfloat16"
    is a dtype, an activation's name is the function, an attention backend's
    name is Megatron-Core's enum member."""
    import torch
    import torch.nn.functional as F

    out = {}
    for key, value in values.items():
        if isinstance(value, str) and value.startswith("torch."):
            value = getattr(torch, value[len("torch.") :])
        elif key in CALLABLES:
            value = getattr(F, value)
        elif key == "attention_backend":
            from megatron.core.transformer.enums import AttnBackend

            value = AttnBackend[value]
        out[key] = value
    return out


def strict(cls, values):
    """`values` for `cls`, refusing a name the class does not define (a
    dataclass would otherwise fail late, or a setattr pass silently)."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise SystemExit(f"{cls.__name__} (pinned package) has no setting {', '.join(unknown)}")
    return values


def core_model_config(plan):
    """The model group (with its precision) as Megatron-Core's own config."""
    if plan["mla"]:
        from megatron.core.transformer.transformer_config import MLATransformerConfig as Config
    else:
        from megatron.core.transformer.transformer_config import TransformerConfig as Config
    return Config(**strict(Config, resolve({**plan["model"], **plan["model_precision"]})))


# TransformerEngine's version Megatron-Core validates against where TE is
# not importable (a CPU): the floor Megatron-Bridge 0.3.1 pins
# (transformer-engine>=2.10.0a0,<2.13.0), which the NeMo container meets.
CONTAINER_TE = "2.10.0"


def have_te():
    try:
        import transformer_engine  # noqa: F401
    except ImportError:
        return False
    return True


def check(plan):
    """Validate every Megatron-Core group without a GPU; print what was built."""
    import megatron.core.utils as mcore_utils
    from megatron.core.distributed import DistributedDataParallelConfig
    from megatron.core.optimizer.optimizer_config import OptimizerConfig
    from packaging.version import Version

    if not have_te():
        mcore_utils._te_version = Version(CONTAINER_TE)

    model = core_model_config(plan)
    values = strict(OptimizerConfig, resolve(plan["optimizer"]))
    if values.get("use_precision_aware_optimizer"):
        # What Megatron-Core asserts beside TransformerEngine's FusedAdam.
        assert values["optimizer"] == "adam" and values["use_distributed_optimizer"], (
            "the precision-aware optimizer needs the distributed Adam"
        )
    if values.get("use_precision_aware_optimizer") and not have_te():
        # Megatron-Core checks for TransformerEngine's FusedAdam here, which
        # only the container has: the names and the rest are checked.
        unchecked = ["use_precision_aware_optimizer"] + [k for k in values if k.endswith("_dtype")]
        print(f"not checked without TransformerEngine: {', '.join(unchecked)}", file=sys.stderr)
        values = {k: v for k, v in values.items() if k not in unchecked}
    optimizer = OptimizerConfig(**values)
    ddp = DistributedDataParallelConfig(
        **strict(DistributedDataParallelConfig, resolve(plan["ddp"]))
    )
    built = {
        type(model).__name__: {k: getattr(model, k) for k in plan["model"] if k not in CALLABLES},
        "OptimizerConfig": {k: getattr(optimizer, k) for k in plan["optimizer"]},
        "DistributedDataParallelConfig": {k: getattr(ddp, k) for k in plan["ddp"]},
        "peft": check_peft(plan),
    }
    print(json.dumps(built, default=str, sort_keys=True))


def peft_config(plan):
    """Megatron-Bridge's PEFT for a LoRA plan, as the settings name it; None for full training."""
    p = plan.get("peft")
    if not p:
        return None
    if p["class"] == "CanonicalLoRA":
        from megatron.bridge.peft.canonical_lora import CanonicalLoRA

        return CanonicalLoRA(
            target_modules=p["target_modules"], dim=p["dim"], alpha=p["alpha"], dropout=p["dropout"]
        )
    from megatron.bridge.peft.lora import LoRA

    return LoRA(
        target_modules=p["target_modules"], dim=p["dim"], alpha=p["alpha"], dropout=p["dropout"]
    )


def check_peft(plan):
    """What --check can say of a LoRA plan on a CPU (Megatron-Bridge does not import without
    TransformerEngine): a rank and targets, and weights to start from."""
    p = plan.get("peft")
    if not p:
        return None
    assert p["class"] in ("LoRA", "CanonicalLoRA"), p["class"]
    assert p["dim"] >= 1 and p["alpha"] >= 1 and p["target_modules"], p
    assert plan.get("hf_model"), "a LoRA plan needs hf_model= (the weights it fine-tunes)"
    return p


def pretrained_checkpoint(plan, args):
    """A Megatron checkpoint of the weights the LoRA plan fine-tunes: the one given, or
    `hf_model` converted once by Megatron-Bridge's AutoBridge (local rank 0 converts, the
    other ranks of the node wait for its marker file)."""
    if args.pretrained_checkpoint:
        return args.pretrained_checkpoint
    import time

    from megatron.bridge import AutoBridge

    path = os.path.join(args.work_dir, "pretrained")
    done = os.path.join(path, ".converted")
    if int(os.environ.get("LOCAL_RANK", "0")) == 0 and not os.path.exists(done):
        AutoBridge.import_ckpt(plan["hf_model"], path)
        open(done, "w").close()
    while not os.path.exists(done):
        time.sleep(10)
    return path


def data_blend(data_dir):
    """Megatron's indexed datasets in `data_dir`: every `<prefix>.bin` with
    its `<prefix>.idx` (made by Megatron-LM's tools/preprocess_data.py)."""
    prefixes = sorted(
        p[: -len(".bin")] for p in glob.glob(os.path.join(data_dir, "**", "*.bin"), recursive=True)
    )
    prefixes = [p for p in prefixes if os.path.exists(p + ".idx")]
    return (prefixes, None) if prefixes else None


def build(plan, args):
    """The ConfigContainer Megatron-Bridge trains, every group from the plan."""
    from megatron.bridge.models.gpt_provider import GPTModelProvider
    from megatron.bridge.models.mla_provider import MLAModelProvider
    from megatron.bridge.training.comm_overlap import CommOverlapConfig
    from megatron.bridge.training.config import (
        CheckpointConfig,
        ConfigContainer,
        DistributedDataParallelConfig,
        GPTDatasetConfig,
        LoggerConfig,
        OptimizerConfig,
        RNGConfig,
        SchedulerConfig,
        TrainingConfig,
    )
    from megatron.bridge.training.mixed_precision import MixedPrecisionConfig
    from megatron.bridge.training.tokenizers.config import TokenizerConfig

    provider = MLAModelProvider if plan["mla"] else GPTModelProvider
    model = provider(**strict(provider, resolve({**plan["model"], **plan["provider"]})))
    # YaRN on a GPT model: Megatron-Core's GPTModel reads these from its
    # config by name; the generic provider does not declare them
    # (Megatron-Bridge's gpt_oss_bridge.py sets them the same way).
    for key, value in (plan.get("yarn") or {}).items():
        setattr(model, key, value)
    train = dict(plan["train"])
    if args.max_steps:
        train["train_iters"] = args.max_steps
    blend = None if args.mock_data else data_blend(args.data_dir)
    if blend is None and not args.mock_data:
        raise SystemExit(
            f"no Megatron indexed dataset (<prefix>.bin + .idx) under {args.data_dir}: "
            "preprocess the data with Megatron-LM's tools/preprocess_data.py, or pass --mock_data"
        )
    checkpoints = args.checkpoint_dir if plan["save_interval"] else None
    # Megatron-FSDP saves only in its own format (Megatron-Bridge asserts it).
    ckpt_format = "fsdp_dtensor" if plan["ddp"]["use_megatron_fsdp"] else "torch_dist"
    peft = peft_config(plan)
    pretrained = pretrained_checkpoint(plan, args) if peft else None
    return ConfigContainer(
        model=model,
        train=TrainingConfig(**strict(TrainingConfig, train)),
        optimizer=OptimizerConfig(**strict(OptimizerConfig, resolve(plan["optimizer"]))),
        ddp=DistributedDataParallelConfig(
            **strict(DistributedDataParallelConfig, resolve(plan["ddp"]))
        ),
        scheduler=SchedulerConfig(lr_decay_style="constant", lr_warmup_iters=0),
        dataset=GPTDatasetConfig(
            **strict(GPTDatasetConfig, plan["dataset"]),
            random_seed=1234,
            blend=blend,
            blend_per_split=None,
            split="9999,8,2",
            reset_attention_mask=False,
            reset_position_ids=False,
            eod_mask_loss=False,
            num_dataset_builder_threads=1,
            data_sharding=True,
            dataloader_type="single",
        ),
        logger=LoggerConfig(log_interval=10, log_throughput=True),
        tokenizer=TokenizerConfig(
            tokenizer_type="NullTokenizer", vocab_size=plan["provider"]["vocab_size"]
        ),
        checkpoint=CheckpointConfig(
            save_interval=plan["save_interval"],
            save=checkpoints,
            load=checkpoints,
            ckpt_format=ckpt_format,
            pretrained_checkpoint=pretrained,
        ),
        peft=peft,
        rng=RNGConfig(seed=1234),
        mixed_precision=MixedPrecisionConfig(
            **strict(MixedPrecisionConfig, resolve(plan["mixed_precision"]))
        ),
        comm_overlap=CommOverlapConfig(**strict(CommOverlapConfig, plan["comm_overlap"]))
        if plan["comm_overlap"]
        else None,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--check", action="store_true", help="validate the settings with Megatron-Core; no GPU"
    )
    ap.add_argument("--plan_file", default=PLAN_FILE)
    ap.add_argument("--data_dir", default=os.environ.get("SM_CHANNEL_TRAIN", "data"))
    ap.add_argument("--checkpoint_dir", default="/opt/ml/checkpoints")
    ap.add_argument("--max_steps", type=int, default=0, help="train this many iterations (a trial)")
    ap.add_argument(
        "--mock_data",
        type=lambda s: s.lower() in ("1", "true", "yes"),
        default=False,
        help="train on Megatron's mock data (a trial of speed and memory only)",
    )
    ap.add_argument(
        "--pretrained_checkpoint",
        default=os.environ.get("SM_CHANNEL_PRETRAINED", ""),
        help="LoRA: the Megatron checkpoint to fine-tune (else hf_model is converted)",
    )
    ap.add_argument(
        "--work_dir",
        default=os.environ.get("TMPDIR", "/tmp"),
        help="LoRA: where hf_model is converted to Megatron's format",
    )
    ap.add_argument("--plan", default="", help="the plan's link (recorded, not read)")
    args, _ = ap.parse_known_args(argv)
    plan = load_plan(args.plan_file)
    if plan.get("unsupported"):
        raise SystemExit(
            f"this launcher does not run {plan['unsupported']} (the planner's error says so)"
        )
    if plan.get("errors"):
        raise SystemExit(
            f"the planner found errors in this plan ({', '.join(plan['errors'])}): fix them first"
        )
    if args.check:
        check(plan)
        return 0
    from megatron.bridge.training.finetune import finetune
    from megatron.bridge.training.gpt_step import forward_step
    from megatron.bridge.training.pretrain import pretrain

    config = build(plan, args)
    (finetune if config.peft else pretrain)(config, forward_step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
