"""What the plan asks for, read from the launcher's hyperparameters, and the
setup it gives on the world this job got (train.py's first part: see its
docstring for each argument)."""

import argparse
import math
import os

MEASURED_TAG = "TRAIN_PLANNER_MEASURED"
SETUP_TAG = "TRAIN_PLANNER_SETUP"
LINE_VERSION = 1
PRECISIONS = ("fp32", "bf16", "bf16-pure", "fp8", "mxfp8", "nvfp4")
LOW_PRECISION = ("fp8", "mxfp8", "nvfp4")
# MLA (DeepSeek-V3, Kimi K2) projects queries through q_a/q_b (or q_proj) and keys and values
# together through kv_a_proj_with_mqa/kv_b_proj: the planner counts them as q and as k and v.
MLA_QUERY = ("q_a_proj", "q_b_proj")
MLA_KEY_VALUE = ("kv_a_proj_with_mqa", "kv_b_proj")
ATTENTION_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj") + MLA_QUERY + MLA_KEY_VALUE
LORA_TARGETS = ATTENTION_TARGETS + ("gate_proj", "up_proj", "down_proj", "w1", "w2", "w3")
# The planner's lora_targets, as PEFT module names (q,v: PEFT's default for Llama-style models).
LORA_TARGET_SETS = {
    "all-linear": LORA_TARGETS,
    "attention": ATTENTION_TARGETS,
    "q,v": ("q_proj", "v_proj") + MLA_QUERY + MLA_KEY_VALUE,
}
# A module the planner names as Llama does, under each family's own names (Mixtral's experts).
LORA_FAMILY_NAMES = {
    "gate_proj": ("gate_proj", "w1"),
    "up_proj": ("up_proj", "w3"),
    "down_proj": ("down_proj", "w2"),
}


def lora_target_names(targets):
    """The PEFT module names of the planner's lora_targets: a set's word, or its list of names."""
    if targets in LORA_TARGET_SETS:
        return LORA_TARGET_SETS[targets]
    names = [n.strip() for n in targets.split(",") if n.strip()]
    unknown = [n for n in names if n not in LORA_TARGETS]
    if unknown or not names:
        raise PlanError(
            f"--lora_targets {targets!r}: expected one of {', '.join(LORA_TARGET_SETS)} "
            f"or module names among {', '.join(LORA_TARGETS)}"
        )
    return tuple(alias for n in names for alias in LORA_FAMILY_NAMES.get(n, (n,)))


class PlanError(Exception):
    """A setting this script cannot honour: printed as one clear line, exit code 2."""


def str2bool(value):
    if isinstance(value, bool):
        return value
    if value.lower() in ("1", "true", "yes"):
        return True
    if value.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {value!r}")


def checkpointing_value(value):
    if value in ("none", "selective", "full", "op"):
        return value
    try:
        fraction = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected none, selective, full, op or a fraction, got {value!r}"
        ) from None
    if not 0.0 <= fraction <= 1.0:
        raise argparse.ArgumentTypeError(f"the recomputed fraction must be in 0..1, got {value}")
    return value


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model_id", default="", help="a Hub id or a local directory")
    p.add_argument("--plan", default="", help="the planner's query for this plan")
    p.add_argument("--max_seq_length", type=int, required=True)
    p.add_argument("--per_device_train_batch_size", type=int, default=1)
    p.add_argument("--gradient_accumulation_steps", type=int, default=1)
    p.add_argument("--max_steps", type=int, required=True)
    p.add_argument("--learning_rate", type=float, default=2e-5)
    p.add_argument("--precision", choices=PRECISIONS, default="bf16")
    p.add_argument(
        "--fp8_fallback",
        type=str2bool,
        default=False,
        help="train in BF16 where the low-precision path is unavailable",
    )
    p.add_argument("--checkpointing", type=checkpointing_value, default="none")
    p.add_argument("--activation_offloading", type=str2bool, default=False)
    p.add_argument("--zero_stage", type=int, choices=(0, 1, 2, 3), default=3)
    p.add_argument("--shard_degree", type=int, default=0)
    p.add_argument("--planned_world_size", type=int, default=0)
    for name in ("tp", "pp", "cp", "ep"):
        p.add_argument(f"--{name}", type=int, default=1)
    p.add_argument(
        "--sequence_parallel",
        type=str2bool,
        default=False,
        help="with tp > 1: split the norms and the residual stream along the sequence",
    )
    p.add_argument("--attn_implementation", choices=("sdpa", "eager"), default="sdpa")
    p.add_argument("--loss", choices=("plain", "fused"), default="plain")
    p.add_argument(
        "--optim",
        choices=("adamw", "adamw-foreach", "adamw8bit", "adafactor", "sgd"),
        default="adamw",
    )
    p.add_argument("--train_mode", choices=("full", "lora", "qlora"), default="full")
    p.add_argument("--lora_r", type=int, default=16)
    p.add_argument(
        "--lora_alpha", type=int, default=0, help="PEFT's lora_alpha; 0 = twice the rank"
    )
    p.add_argument(
        "--lora_targets",
        default="all-linear",
        help="the Linear layers the adapters train: all-linear, attention, q,v or PEFT module names",
    )
    p.add_argument(
        "--lora_dtype",
        choices=("fp32", "bf16"),
        default="fp32",
        help="the adapters' dtype: fp32 (PEFT's autocast_adapter_dtype) or the base's",
    )
    p.add_argument("--stage", choices=("sft", "dpo"), default="sft")
    p.add_argument("--beta", type=float, default=0.1, help="DPO's beta (TRL's default)")
    p.add_argument("--save_steps", type=int, default=0, help="0 = only at the end")
    p.add_argument("--save", choices=("full", "weights", "adapter"), default="full")
    p.add_argument("--async_save", type=str2bool, default=False)
    p.add_argument("--output_dir", default="/opt/ml/checkpoints")
    p.add_argument("--model_dir", default=os.environ.get("SM_MODEL_DIR", ""))
    p.add_argument("--data_dir", default=os.environ.get("SM_CHANNEL_TRAIN", ""))
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--log_steps", type=int, default=10)
    return p.parse_args(argv)


# ---- the setup: what the plan asks for, on the world this job got -----------------------


def resolve_setup(args, world_size):
    """Every decision the script takes from the plan, as plain data (tested against the planner)."""
    if not args.model_id:
        raise PlanError(
            "no model: give the plan a Hugging Face model (hf_model=...) or pass --model_id"
        )
    for name in ("pp", "cp", "ep"):
        if getattr(args, name) > 1:
            raise PlanError(
                f"{name}={getattr(args, name)}: this script runs data parallelism (DDP, FSDP2, HSDP) "
                "and tensor parallelism; pipeline, context and expert parallelism need Megatron-Core"
            )
    if args.train_mode == "qlora" and args.zero_stage > 0 and world_size > 1:
        raise PlanError("QLoRA with ZeRO/FSDP sharding is not supported here: plan it with zero=0")
    if args.precision in LOW_PRECISION and args.train_mode != "full":
        raise PlanError(
            f"{args.precision} with {args.train_mode}: low-precision GEMMs train full models only"
        )
    if args.stage == "dpo" and args.tp > 1:
        raise PlanError(
            f"tp={args.tp} with DPO: the reference model runs data parallel only (tp=1)"
        )
    tp = check_tensor_parallel(args, world_size)
    dp = world_size // tp
    # Under TP, FSDP2 runs even over one data-parallel rank (its BF16 cast), as the planner models.
    fsdp = args.zero_stage >= 2 and (dp > 1 or tp > 1)
    shard = 1
    if fsdp:
        shard = args.shard_degree or dp
        if args.planned_world_size and world_size != args.planned_world_size:
            # A trial on fewer GPUs keeps the plan's sharding group where it fits.
            shard = math.gcd(shard, dp)
        if dp % shard:
            raise PlanError(f"shard_degree={shard} does not divide the {dp} data-parallel ranks")
    return {
        "world_size": world_size,
        "data_parallel": dp,
        "tensor_parallel": tp,
        "sequence_parallel": tp > 1 and args.sequence_parallel,
        "zero_stage": args.zero_stage if world_size > 1 else 0,
        "strategy": strategy(args, fsdp, dp),
        "shard_group": shard,
        "replicas": dp // shard if fsdp else dp,
        "reshard_after_forward": args.zero_stage == 3,
        "precision": args.precision,
        # Planner: FSDP full training gathers BF16 copies of fp32 shards (a mixed-precision
        # policy); everything else in BF16 runs fp32 weights under autocast (HF Trainer's bf16).
        "compute": compute_path(args, fsdp),
        "checkpointing": args.checkpointing,
        "activation_offloading": args.activation_offloading,
        "attention": args.attn_implementation,
        "loss": args.loss,
        "train_mode": args.train_mode,
        "lora_r": args.lora_r if args.train_mode != "full" else 0,
        "lora_alpha": (args.lora_alpha or 2 * args.lora_r) if args.train_mode != "full" else 0,
        "lora_targets": args.lora_targets if args.train_mode != "full" else None,
        # In an FP32 plan the base's dtype is FP32 too.
        "lora_dtype": (args.lora_dtype if args.precision != "fp32" else "fp32")
        if args.train_mode != "full"
        else None,
        "optim": args.optim,
        "micro_batch": args.per_device_train_batch_size,
        "grad_accum": args.gradient_accumulation_steps,
        "seq": args.max_seq_length,
        "stage": args.stage,
        # DPO's reference: a frozen BF16 copy (FP32 in an FP32 plan), sharded as the
        # policy is; under LoRA the base with its adapters switched off.
        "reference": reference_kind(args),
    }


def reference_kind(args):
    if args.stage != "dpo":
        return None
    return "frozen copy" if args.train_mode == "full" else "adapters off"


def check_tensor_parallel(args, world_size):
    """Tensor parallelism (with sequence parallelism) on the GPUs of a node, under FSDP2 across."""
    tp = args.tp
    if tp <= 1:
        return 1
    if args.zero_stage < 2:
        raise PlanError(
            f"tp={tp} with zero={args.zero_stage}: tensor parallelism runs under FSDP2 "
            "here (zero=2 or 3); DDP does not take tensor-parallel weights"
        )
    if args.train_mode != "full":
        raise PlanError(f"tp={tp} with {args.train_mode}: adapters train data parallel only (tp=1)")
    if args.precision in LOW_PRECISION:
        raise PlanError(
            f"tp={tp} with {args.precision}: tensor-parallel layers run BF16 GEMMs here; "
            "plan low precision with tp=1 or stack=megatron"
        )
    if world_size % tp:
        raise PlanError(f"tp={tp} does not divide the world size {world_size}")
    return tp


def strategy(args, fsdp, dp):
    if fsdp:
        return "fsdp2"
    if dp == 1:
        return "single"
    return "ddp+zero1" if args.zero_stage == 1 else "ddp"


def compute_path(args, fsdp):
    if args.precision == "fp32":
        return "fp32"
    if args.precision == "bf16-pure":
        return "bf16 weights"
    if fsdp and args.train_mode == "full":
        return "fsdp bf16 gather, fp32 reduce"
    return "autocast bf16"


def log(rank, *parts):
    if rank == 0:
        print(*parts, flush=True)
