#!/usr/bin/env python3
"""Train Planner's training script for SageMaker (Hugging Face Transformers + PyTorch).

It trains exactly what the planner modelled. SageMaker passes the launcher's
hyperparameters as `--name value` arguments; each one below names the planner
setting it carries:

  --precision       fp32 | bf16 (fp32 weights, BF16 compute) | bf16-pure | fp8 | mxfp8 | nvfp4
  --checkpointing   none | selective (attention core) | full | op | a fraction of the layers
  --zero_stage      0 DDP, 1 optimizer states sharded, 2 + gradients (FSDP2 without
                    resharding after forward), 3 FSDP2 full shard
  --shard_degree    FSDP2 sharding group; replicas beyond it (HSDP); 0 = every rank
  --loss            plain (full logits, upcast to fp32) | fused (chunked: never the full logits)
  --train_mode      full | lora | qlora, with --lora_r and --lora_alpha
  --stage           sft (next-token loss) | dpo (preference pairs, TRL's sigmoid loss, --beta)

Data: the `train` channel (SM_CHANNEL_TRAIN) holds JSON Lines files with a
`text` field, or a dataset saved with `datasets.save_to_disk` that has an
`input_ids` column. Texts are tokenized and packed into --max_seq_length blocks.
For --stage dpo, each line has `prompt`, `chosen` and `rejected` (TRL's
preference format): prompt + chosen and prompt + rejected each fill one row of
--max_seq_length tokens (padded; a long pair keeps the end of its prompt).

Checkpoints go to --output_dir (SageMaker syncs /opt/ml/checkpoints to S3); a
restarted job (managed spot) resumes from the newest complete one.

Every run ends by printing one line that starts with TRAIN_PLANNER_MEASURED:
paste it into the planner (page, or `plan report '<plan>' --measured '<line>'`)
to compare measured with predicted and to re-base time and cost.
"""

import argparse
import contextlib
import glob
import json
import math
import os
import re
import sys
import time

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


# ---- distributed ----------------------------------------------------------------------


def init_distributed(torch):
    import torch.distributed as dist

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local)
    backend = "nccl" if cuda else "gloo"
    if world > 1:
        dist.init_process_group(backend)
    else:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    return rank, local, world, torch.device("cuda", local) if cuda else torch.device("cpu")


def log(rank, *parts):
    if rank == 0:
        print(*parts, flush=True)


def describe_device(torch, device):
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        major, minor = torch.cuda.get_device_capability(device)
        return name, (major, minor)
    return "cpu", (0, 0)


# ---- model ----------------------------------------------------------------------------


def load_model(args, torch, device):
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(args.model_id)
    kwargs = {"attn_implementation": args.attn_implementation}
    if args.train_mode == "qlora":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16,
        )
        kwargs["device_map"] = {"": device}
    kwargs[dtype_key()] = weights_dtype(args, torch)
    if args.train_mode != "qlora":
        kwargs.pop("device_map", None)
    attention_as_planned(torch)
    model = AutoModelForCausalLM.from_pretrained(args.model_id, config=config, **kwargs)
    model.config.use_cache = False
    if args.train_mode != "full":
        model = add_adapters(args, model)
    return model


def attention_as_planned(torch):
    """SDPA runs causal and mask-free, on a fused kernel, as the planner models it.

    Our blocks are contiguous token runs, never documents packed with positions reset.
    With no attention mask and no cache (training), Transformers 4.56 reads packed
    documents from the position ids (`masking_utils.find_packed_sequence_indices`) and,
    finding none, still builds a boolean `b x 1 x s x s` mask: SDPA then keeps an additive
    copy per layer for backward and cannot run flash attention (16 GiB a sequence at 128K).
    Saying "not packed" keeps attention causal; sliding-window layers still get their masks.
    FP32 has no flash kernel and the memory-efficient one takes no grouped KV heads: with
    `enable_gqa` SDPA would fall back to its math path (`s x s` scores per head), so FP32
    repeats the KV heads instead (Transformers' own path for masked attention). The dtype
    is the one SDPA computes in: under BF16 autocast the keys arrive in FP32 (RoPE's FP32
    tables) and autocast casts them, so they keep grouped heads.
    """
    try:
        from transformers import masking_utils
    except ImportError:  # older Transformers build no such mask
        masking_utils = None
    if hasattr(masking_utils, "find_packed_sequence_indices"):
        masking_utils.find_packed_sequence_indices = lambda *args, **kwargs: None
    try:
        from transformers.integrations import sdpa_attention
    except ImportError:  # older Transformers repeat KV heads themselves
        return
    grouped = getattr(sdpa_attention, "use_gqa_in_sdpa", None)
    if grouped is not None and not getattr(grouped, "as_planned", False):

        def use_gqa_in_sdpa(attention_mask, key, *args, **kwargs):
            return sdpa_dtype(torch, key) != torch.float32 and grouped(
                attention_mask, key, *args, **kwargs
            )

        use_gqa_in_sdpa.as_planned = True
        sdpa_attention.use_gqa_in_sdpa = use_gqa_in_sdpa


def sdpa_dtype(torch, tensor):
    """The dtype SDPA computes `tensor` in: autocast's where autocast is on."""
    device = tensor.device.type
    if device in ("cuda", "cpu") and torch.is_autocast_enabled(device):
        return torch.get_autocast_dtype(device)
    return tensor.dtype


def weights_dtype(args, torch):
    """Weights in their training dtype: fp32 masters, or BF16 for pure BF16 and a frozen LoRA base."""
    bf16_weights = args.precision == "bf16-pure" or args.train_mode != "full"
    return torch.bfloat16 if bf16_weights and args.precision != "fp32" else torch.float32


def dtype_key():
    """`dtype` from Transformers 4.56, `torch_dtype` before (the SMP and older images)."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def add_adapters(args, model):
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    targets = [t for t in lora_target_names(args.lora_targets) if t in present]
    if not targets:
        raise PlanError(
            f"--lora_targets {args.lora_targets}: none of these modules is in {type(model).__name__}"
        )
    # PEFT's preparation turns the norms, embedding and head to fp32 for autocast; in pure bf16
    # they stay bf16, as the planner models it (memory::qlora_fp32_residual).
    if args.train_mode == "qlora" and args.precision != "bf16-pure":
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    lora = LoraConfig(
        r=args.lora_r,
        lora_alpha=args.lora_alpha or 2 * args.lora_r,
        lora_dropout=0.0,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )
    # PEFT keeps the adapters in fp32 (autocast_adapter_dtype): 16 B per adapter parameter;
    # --lora_dtype bf16 keeps them in the base's dtype.
    return get_peft_model(model, lora, autocast_adapter_dtype=args.lora_dtype == "fp32")


def decoder_layers(model):
    """The decoder layers' ModuleList, through the loss and PEFT wrappers if there are any."""
    model = getattr(model, "lm", model)
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, "model", base)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise PlanError(
            f"{type(base).__name__}: cannot find its decoder layers (model.model.layers)"
        )
    return base, inner, layers


def apply_low_precision(args, model, torch, capability):
    """Low-precision GEMMs through torchao (embedding, norms and LM head stay BF16, as planned)."""
    need = (10, 0) if args.precision in ("mxfp8", "nvfp4") else (8, 9)
    why = None
    if capability < need:
        why = f"{args.precision} needs a GPU of compute capability {need[0]}.{need[1]} or newer"
    elif args.precision == "nvfp4":
        why = "NVFP4 training needs TransformerEngine's NVFP4 recipe, which this script does not wire yet"
    else:
        try:
            import torchao  # noqa: F401
        except ImportError:
            why = "torchao is not installed (scripts/requirements.txt pins it)"
    if why:
        if not args.fp8_fallback:
            raise PlanError(f"{why}. Pass --fp8_fallback True to train in BF16 instead.")
        return f"bf16 (fallback: {why})"

    def linear_filter(module, fqn):
        return (
            isinstance(module, torch.nn.Linear)
            and "lm_head" not in fqn
            and module.in_features % 16 == 0
            and module.out_features % 16 == 0
        )

    if args.precision == "fp8":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        convert_to_float8_training(
            model,
            config=Float8LinearConfig.from_recipe_name("tensorwise"),
            module_filter_fn=linear_filter,
        )
        return "fp8 tensorwise (torchao)"
    from torchao.prototype.mx_formats import MXLinearConfig
    from torchao.quantization import quantize_

    quantize_(model, config=MXLinearConfig(), filter_fn=linear_filter)
    return "mxfp8 (torchao)"


# ---- activation checkpointing ---------------------------------------------------------


def apply_checkpointing(args, model, torch):
    """Returns how many decoder layers recompute their activations."""
    mode = args.checkpointing
    if mode == "none":
        return 0
    if mode == "selective":
        return recompute_attention_core(model, torch)
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        checkpoint_wrapper,
    )

    _, _, layers = decoder_layers(model)
    count = len(layers) if mode in ("full", "op") else round(float(mode) * len(layers))
    extra = {"context_fn": op_level_policy(torch)} if mode == "op" else {}
    for i in range(count):
        layers[i] = checkpoint_wrapper(
            layers[i], checkpoint_impl=CheckpointImpl.NO_REENTRANT, **extra
        )
    return count


def op_level_policy(torch):
    """Op-level selective checkpointing: keep matmul and attention outputs, recompute the rest."""
    import functools

    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    keep = {aten.mm.default, aten.addmm.default, aten.bmm.default}
    for name in (
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
    ):
        op = getattr(aten, name, None)
        if op is not None:
            keep.add(op.default)

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op in keep else CheckpointPolicy.PREFER_RECOMPUTE

    return functools.partial(create_selective_checkpoint_contexts, policy)


def recompute_attention_core(model, torch):
    """Megatron's selective recomputation: only softmax(QK^T)V is recomputed in backward."""
    import importlib

    from torch.utils.checkpoint import checkpoint
    from transformers import AttentionInterface
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    base, _, layers = decoder_layers(model)
    config = base.config
    impl = config._attn_implementation
    if impl == "eager":
        attn_module = importlib.import_module(type(layers[0].self_attn).__module__)
        core = attn_module.eager_attention_forward
    else:
        core = ALL_ATTENTION_FUNCTIONS[impl]

    def recomputed(module, query, key, value, attention_mask, **kwargs):
        return checkpoint(
            core, module, query, key, value, attention_mask, use_reentrant=False, **kwargs
        )

    name = f"{impl}_recompute_core"
    AttentionInterface.register(name, recomputed)
    # The same causal mask as `impl` (Transformers >= 4.53 gives an unknown name none at all).
    try:
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
    except ImportError:
        pass
    else:
        ALL_MASK_ATTENTION_FUNCTIONS.register(name, ALL_MASK_ATTENTION_FUNCTIONS[impl])
    for m in base.modules():
        if hasattr(m, "config") and getattr(m.config, "_attn_implementation", None) == impl:
            m.config._attn_implementation = name
    return len(layers)


# ---- tensor parallelism ----------------------------------------------------------------

# The decoder-layer modules train.py splits: a Llama-style layer (Llama, Mistral, Qwen2).
TP_LAYER = {
    "input_layernorm",
    "post_attention_layernorm",
    "self_attn",
    "mlp",
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
}


def device_mesh(setup, device):
    """One mesh for the job: (replicate, shard) data parallel outside, tensor parallel inside
    (consecutive ranks, the GPUs of one node), as torchtitan builds its `world_mesh`."""
    from torch.distributed.device_mesh import init_device_mesh

    if setup["strategy"] != "fsdp2":
        return None
    tp = setup["tensor_parallel"]
    dims = [("replicate", setup["replicas"])] if setup["replicas"] > 1 else []
    dims += [("shard", setup["shard_group"])] + ([("tp", tp)] if tp > 1 else [])
    return init_device_mesh(
        device.type, tuple(k for _, k in dims), mesh_dim_names=tuple(n for n, _ in dims)
    )


def data_parallel_mesh(mesh):
    names = mesh.mesh_dim_names
    return mesh["replicate", "shard"] if "replicate" in names else mesh["shard"]


def apply_tensor_parallel(args, model, tp_mesh):
    """Megatron-style TP through PyTorch's DTensor API, as torchtitan applies it to Llama
    (torchtitan/models/llama3/infra/parallelize.py): column-parallel q/k/v/gate/up, row-parallel
    o/down, the embedding split over the vocabulary and the LM head's logits kept split for a
    vocabulary-parallel loss (`loss_parallel`). With sequence parallelism the norms and the
    residual stream are split along the sequence (all-gather in, reduce-scatter out); without,
    they are whole on every rank (all-reduce out)."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    base, inner, layers = decoder_layers(model)
    for layer in layers:
        names = {
            n
            for n, m in layer.named_modules()
            if n and any(True for _ in m.parameters(recurse=False))
        }
        names |= {"self_attn", "mlp"}
        unknown = sorted(names - TP_LAYER)
        if unknown or not TP_LAYER <= {n for n, _ in layer.named_modules()}:
            raise PlanError(
                f"tp={args.tp}: {type(layer).__name__} is not a Llama-style layer "
                f"(it has {', '.join(unknown) or 'other modules'}); plan it with tp=1"
            )
    sp = args.sequence_parallel
    stream = Shard(1) if sp else Replicate()  # the residual stream between the layers
    head_input = stream if args.loss == "plain" else Replicate()
    parallelize_module(
        base,
        tp_mesh,
        {
            "model.embed_tokens": RowwiseParallel(
                input_layouts=Replicate(), output_layouts=stream, use_local_output=not sp
            ),
            "lm_head": ColwiseParallel(
                input_layouts=head_input, output_layouts=Shard(-1), use_local_output=False
            ),
            **({"model.norm": SequenceParallel()} if sp else {}),
        },
    )
    if not sp:  # whole norms, their weights on the TP mesh too (one mesh for FSDP2 and AdamW)
        replicate_over(inner.norm, tp_mesh)
        for layer in layers:
            replicate_over(layer.input_layernorm, tp_mesh)
            replicate_over(layer.post_attention_layernorm, tp_mesh)
    plan = {
        "self_attn.q_proj": ColwiseParallel(),
        "self_attn.k_proj": ColwiseParallel(),
        "self_attn.v_proj": ColwiseParallel(),
        "self_attn.o_proj": RowwiseParallel(output_layouts=stream, use_local_output=not sp),
        "mlp.gate_proj": ColwiseParallel(),
        "mlp.up_proj": ColwiseParallel(),
        "mlp.down_proj": RowwiseParallel(output_layouts=stream, use_local_output=not sp),
    }
    if sp:
        plan.update(
            {
                "input_layernorm": SequenceParallel(),
                "self_attn": PrepareModuleInput(
                    input_kwarg_layouts={"hidden_states": Shard(1)},
                    desired_input_kwarg_layouts={"hidden_states": Replicate()},
                    use_local_output=True,
                ),
                "post_attention_layernorm": SequenceParallel(),
                "mlp": PrepareModuleInput(
                    input_layouts=(Shard(1),),
                    desired_input_layouts=(Replicate(),),
                    use_local_output=True,
                ),
            }
        )
    for layer in layers:
        parallelize_module(layer, tp_mesh, plan)
    if base.config.tie_word_embeddings:
        # Both split over the vocabulary (Shard(0)): one weight again, as the model ties them.
        base.lm_head.weight = inner.embed_tokens.weight


def replicate_over(module, tp_mesh):
    """A module whose inputs are whole on every TP rank: its weights become replicated DTensors
    on the TP mesh (every rank computes the same gradient); it takes and gives plain tensors."""
    from torch.distributed.tensor import DTensor, Replicate, distribute_module

    def to_dtensor(_, inputs, mesh):
        return tuple(
            DTensor.from_local(x, mesh, [Replicate()], run_check=False) if hasattr(x, "dim") else x
            for x in inputs
        )

    def to_local(_, output, mesh):
        return output.to_local()

    distribute_module(module, tp_mesh, input_fn=to_dtensor, output_fn=to_local)


# ---- sharding ---------------------------------------------------------------------------


def shard_model(args, setup, model, torch, device, mesh):
    if setup["strategy"] == "single":
        return model.to(device) if args.train_mode != "qlora" else model
    if setup["strategy"] in ("ddp", "ddp+zero1"):
        from torch.nn.parallel import DistributedDataParallel as DDP

        if args.train_mode != "qlora":
            model = model.to(device)
        ids = [device.index] if device.type == "cuda" else None
        # Gradients as views into DDP's buckets: one gradient-sized buffer for the whole step,
        # not buckets plus gradients (the planner's persistent gradient buffer).
        return DDP(model, device_ids=ids, gradient_as_bucket_view=True)
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except ImportError:  # PyTorch 2.5 (the SMP v2 image)
        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = data_parallel_mesh(mesh)
    if setup["compute"].startswith("fsdp bf16"):
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    else:
        mp = MixedPrecisionPolicy()
    reshard = setup["reshard_after_forward"]
    _, _, layers = decoder_layers(model)
    for layer in layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard)
    return model


def local_parameters(model):
    """Parameter elements this rank holds, after TP and FSDP sharding (rank 0's, as logged)."""
    return sum((p.to_local() if hasattr(p, "to_local") else p).numel() for p in model.parameters())


def make_optimizer(args, model, torch, device, setup):
    params = [p for p in model.parameters() if p.requires_grad]
    lr = args.learning_rate
    if args.optim == "adamw8bit":
        import bitsandbytes as bnb

        return bnb.optim.AdamW8bit(params, lr=lr)
    if args.optim == "adafactor":
        return torch.optim.Adafactor(params, lr=lr)
    if args.optim == "sgd":
        return torch.optim.SGD(params, lr=lr)
    kwargs = {"fused": True} if args.optim == "adamw" else {"foreach": True}
    if setup["strategy"] == "ddp+zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        return ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.AdamW, lr=lr, **kwargs)
    return torch.optim.AdamW(params, lr=lr, **kwargs)


# ---- data -------------------------------------------------------------------------------


def data_root(args):
    """The train channel's directory, or a clear stop."""
    root = args.data_dir
    if not root or not os.path.isdir(root):
        raise PlanError(
            f"no training data: the train channel ({root or 'SM_CHANNEL_TRAIN'}) is empty"
        )
    return root


def tokenizer_and_eos(args):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.model_id)
    return tok, tok.eos_token_id if tok.eos_token_id is not None else 0


def json_lines(files, fields):
    """Each non-empty line's string `fields`, with its file and line for messages; a line
    that is not a JSON object with those string fields stops the job, naming where."""
    for path in files:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    values = [row[k] for k in fields]
                    if not all(isinstance(v, str) for v in values):
                        raise TypeError
                except (ValueError, KeyError, TypeError):
                    names = ", ".join(f'"{k}"' for k in fields)
                    raise PlanError(
                        f"{path}:{number}: expected a JSON object with {names} as strings"
                    ) from None
                yield values


def load_blocks(args, rank, world):
    """Token blocks of max_seq_length + 1 for this rank, packed across documents."""
    root = data_root(args)
    if os.path.exists(os.path.join(root, "dataset_info.json")) or os.path.exists(
        os.path.join(root, "state.json")
    ):
        from datasets import load_from_disk

        ids = [i for row in load_from_disk(root)["input_ids"] for i in row]
    else:
        ids = tokenize_jsonl(args, root)
    n = args.max_seq_length + 1
    blocks = [ids[i : i + n] for i in range(0, len(ids) - n + 1, args.max_seq_length)]
    if len(blocks) < world:
        raise PlanError(
            f"the data packs into {len(blocks)} blocks of {args.max_seq_length} tokens: "
            f"fewer than the {world} ranks"
        )
    return blocks[rank::world]


def tokenize_jsonl(args, root):
    files = sorted(
        glob.glob(os.path.join(root, "**", "*.jsonl"), recursive=True)
        + glob.glob(os.path.join(root, "**", "*.json"), recursive=True)
    )
    if not files:
        raise PlanError(f"{root}: no .jsonl files and no saved dataset")
    tok, eos = tokenizer_and_eos(args)
    ids = []
    for (text,) in json_lines(files, ("text",)):
        ids.extend(tok(text, add_special_tokens=False)["input_ids"])
        ids.append(eos)
    return ids


def load_pairs(args, rank, world):
    """DPO: rows of max_seq_length + 1 token ids and their labels, one pair per line."""
    root = data_root(args)
    files = sorted(glob.glob(os.path.join(root, "**", "*.jsonl"), recursive=True))
    if not files:
        raise PlanError(f"{root}: no .jsonl files of preference pairs (prompt, chosen, rejected)")
    tok, eos = tokenizer_and_eos(args)
    pairs = []
    for texts in json_lines(files, ("prompt", "chosen", "rejected")):
        prompt, chosen, rejected = (tok(t, add_special_tokens=False)["input_ids"] for t in texts)
        pairs.append(
            (
                pair_row(prompt, chosen + [eos], args.max_seq_length, eos),
                pair_row(prompt, rejected + [eos], args.max_seq_length, eos),
            )
        )
    if len(pairs) < world:
        raise PlanError(f"{len(pairs)} preference pairs: fewer than the {world} ranks")
    return pairs[rank::world]


def pair_row(prompt, completion, seq, pad):
    """One row of seq + 1 ids and seq labels: the completion's tokens are scored (-100 elsewhere).
    A row too long keeps its completion's start and its prompt's end (TRL's keep_end)."""
    room = seq + 1
    keep = min(len(completion), room - min(len(prompt), room // 2))
    prompt = prompt[max(0, len(prompt) - (room - keep)) :]
    ids = prompt + completion[:keep]
    if prompt:
        labels = [-100] * (len(prompt) - 1) + completion[:keep]
    else:  # the first token has nothing before it to be predicted from
        labels = completion[1:keep]
    labels = labels[:seq]
    return ids + [pad] * (room - len(ids)), labels + [-100] * (seq - len(labels))


def pair_batches(pairs, micro_batch, start, torch):
    """DPO micro-batches forever: the chosen rows, then the rejected ones (TRL's
    concatenated_forward), as (ids, labels)."""
    i = start * micro_batch
    while True:
        chunk = [pairs[(i + j) % len(pairs)] for j in range(micro_batch)]
        i += micro_batch
        rows = [c[0] for c in chunk] + [c[1] for c in chunk]
        yield (
            torch.tensor([r[0] for r in rows], dtype=torch.long),
            torch.tensor([r[1] for r in rows], dtype=torch.long),
        )


def batches(blocks, micro_batch, start, torch):
    """Micro-batches forever, from micro-batch number `start` (so a resumed job continues)."""
    i = start * micro_batch
    while True:
        rows = [blocks[(i + j) % len(blocks)] for j in range(micro_batch)]
        i += micro_batch
        yield torch.tensor(rows, dtype=torch.long)


# ---- loss -------------------------------------------------------------------------------


def with_loss(args, model, torch):
    """The causal LM with its loss as one module, so DDP and FSDP2 see the loss inside forward."""
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    class CausalLMLoss(torch.nn.Module):
        """Mean next-token cross-entropy: `plain` materialises fp32 logits (as HF's loss does),
        `fused` computes the LM head and the loss in chunks of 1,024 tokens, recomputed in backward.
        Given `labels` (DPO), each row's summed log-probability of its labelled tokens instead:
        the same logits and the same cross-entropy, per token (-100 scores nothing)."""

        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, tokens, labels=None):
            rows = tokens.shape[0]
            inputs = tokens[:, :-1]
            per_row = labels is not None
            labels = (labels if per_row else tokens[:, 1:]).flatten()
            reduction = "none" if per_row else "mean"
            if args.loss == "plain":
                logits = self.lm(input_ids=inputs).logits
                loss = F.cross_entropy(logits.float().flatten(0, 1), labels, reduction=reduction)
                return -loss.view(rows, -1).sum(-1) if per_row else loss
            base, inner, _ = decoder_layers(self.lm)
            hidden = inner(input_ids=inputs).last_hidden_state
            if hasattr(hidden, "redistribute"):  # sequence-parallel: gathered for the chunks
                from torch.distributed.tensor import Replicate

                hidden = hidden.redistribute(placements=[Replicate()])
            hidden = hidden.flatten(0, 1)
            head = base.get_output_embeddings()
            total, parts = 0.0, []
            for s in range(0, hidden.shape[0], 1024):
                part = checkpoint(
                    piece,
                    head,
                    hidden[s : s + 1024],
                    labels[s : s + 1024],
                    reduction,
                    use_reentrant=False,
                )
                if per_row:
                    parts.append(part)
                else:
                    total = total + part
            if per_row:
                return -torch.cat(parts).view(rows, -1).sum(-1)
            return total / labels.numel()

    def piece(head, h, y, reduction):
        return F.cross_entropy(
            head(h).float(), y, reduction="none" if reduction == "none" else "sum"
        )

    return CausalLMLoss(model)


# ---- DPO --------------------------------------------------------------------------------


def dpo_loss(policy, reference, beta):
    """TRL's DPO sigmoid loss (DPOTrainer.dpo_loss, loss_type="sigmoid", no label smoothing):
    -log sigmoid(beta ((pi_c - pi_r) - (ref_c - ref_r))), the mean over the pairs. The rows
    are the chosen ones, then the rejected ones."""
    import torch.nn.functional as F

    pairs = policy.shape[0] // 2
    margin = (policy[:pairs] - policy[pairs:]) - (reference[:pairs] - reference[pairs:])
    return -F.logsigmoid(beta * margin).mean()


def frozen_reference(args, setup, lm, torch, device, mesh):
    """DPO's reference for full training: `lm`, the model loaded again in the compute dtype,
    frozen, with the same loss module, sharded by FSDP2 where the policy is (resharded after
    each layer's forward: no backward ever needs it), else on every rank."""
    lm.requires_grad_(False)
    lm.eval()
    reference = with_loss(args, lm, torch)
    if setup["strategy"] != "fsdp2":
        return reference.to(device)
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:  # PyTorch 2.5 (the SMP v2 image)
        from torch.distributed._composable.fsdp import fully_shard

    mesh = data_parallel_mesh(mesh)
    for layer in decoder_layers(reference)[2]:
        fully_shard(layer, mesh=mesh, reshard_after_forward=True)
    fully_shard(reference, mesh=mesh, reshard_after_forward=True)
    return reference


def load_reference(args, torch):
    """The full model once more, in BF16 (FP32 in an FP32 plan), with no adapters."""
    from transformers import AutoModelForCausalLM

    dtype = torch.float32 if args.precision == "fp32" else torch.bfloat16
    attention_as_planned(torch)
    lm = AutoModelForCausalLM.from_pretrained(
        args.model_id, attn_implementation=args.attn_implementation, **{dtype_key(): dtype}
    )
    lm.config.use_cache = False
    return lm


def reference_logps(model, reference, tokens, labels):
    """The reference's per-row log-probabilities, without gradients: the frozen copy, or
    under LoRA the policy itself with its adapters switched off (TRL's null_ref_context)."""
    import torch

    with torch.no_grad():
        if reference is not None:
            return reference(tokens, labels)
        inner = model.module if hasattr(model, "module") else model
        with inner.lm.disable_adapter():
            return model(tokens, labels)


# ---- checkpoints ------------------------------------------------------------------------


def newest_checkpoint(output_dir):
    done = glob.glob(os.path.join(output_dir, "step-*", ".done"))
    steps = sorted(int(re.search(r"step-(\d+)", d).group(1)) for d in done)
    return steps[-1] if steps else 0


def state_for(args, model, optimizer):
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    opts = StateDictOptions(ignore_frozen_params=args.train_mode != "full")
    msd, osd = get_state_dict(model, optimizer, options=opts)
    return {"model": msd} if args.save != "full" else {"model": msd, "optim": osd}


SAVE_GROUP = None


def save_checkpoint(args, model, optimizer, step, rank, pending):
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp

    finish_save(pending, rank)
    path = os.path.join(args.output_dir, f"step-{step:08d}")
    if is_zero1(optimizer):
        save_zero1(model, optimizer, path, rank)
        return None
    state = state_for(args, model, optimizer)
    if args.async_save and dist.get_world_size() > 1:
        # Its own gloo group: the save's collectives run beside training's (as torchtitan does).
        global SAVE_GROUP
        SAVE_GROUP = SAVE_GROUP or dist.new_group(backend="gloo")
        return dcp.async_save(state, checkpoint_id=path, process_group=SAVE_GROUP), path
    dcp.save(state, checkpoint_id=path)
    dist.barrier()
    mark_done(path, rank)
    return None


def finish_save(pending, rank):
    """Wait for an asynchronous save, then mark it complete (DCP's coordinator wrote its metadata)."""
    if pending is not None:
        future, path = pending
        future.result()
        mark_done(path, rank)


def is_zero1(optimizer):
    """DDP + ZeroRedundancyOptimizer, whose states DCP cannot address: saved consolidated on rank 0."""
    return hasattr(optimizer, "consolidate_state_dict")


def save_zero1(model, optimizer, path, rank):
    import torch
    import torch.distributed as dist

    optimizer.consolidate_state_dict(to=0)
    if rank == 0:
        os.makedirs(path, exist_ok=True)
        torch.save(
            {"model": model.module.state_dict(), "optim": optimizer.state_dict()},
            os.path.join(path, "zero1.pt"),
        )
    dist.barrier()
    mark_done(path, rank)


def resume_zero1(model, optimizer, path, step, rank):
    import torch

    state = torch.load(os.path.join(path, "zero1.pt"), map_location="cpu", weights_only=True)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optim"])
    log(rank, f"resumed from {path} (step {step})")
    return step


def mark_done(path, rank):
    if rank == 0:
        with open(os.path.join(path, ".done"), "w") as f:
            f.write("complete\n")


def resume(args, model, optimizer, rank):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_state_dict,
    )

    step = newest_checkpoint(args.output_dir)
    if step == 0:
        return 0
    path = os.path.join(args.output_dir, f"step-{step:08d}")
    if is_zero1(optimizer):
        return resume_zero1(model, optimizer, path, step, rank)
    state = state_for(args, model, optimizer)
    dcp.load(state, checkpoint_id=path)
    opts = StateDictOptions(ignore_frozen_params=args.train_mode != "full", strict=False)
    if "optim" in state:
        set_state_dict(
            model,
            optimizer,
            model_state_dict=state["model"],
            optim_state_dict=state["optim"],
            options=opts,
        )
    else:
        set_model_state_dict(model, state["model"], options=opts)
    log(
        rank,
        f"resumed from {path} (step {step})"
        + ("" if "optim" in state else "; optimizer states start afresh (save=weights/adapter)"),
    )
    return step


def save_final(args, model, rank):
    """The trained model (or adapter) in Hugging Face format in SM_MODEL_DIR, which SageMaker uploads."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    if not args.model_dir:
        return
    opts = StateDictOptions(
        full_state_dict=True, cpu_offload=True, ignore_frozen_params=args.train_mode != "full"
    )
    inner = model.module if hasattr(model, "module") else model
    state = get_model_state_dict(inner, options=opts)
    if rank == 0:
        lm = inner.lm
        state = {k[len("lm.") :] if k.startswith("lm.") else k: v for k, v in state.items()}
        lm.save_pretrained(args.model_dir, state_dict=state)
        log(
            rank,
            f"saved the trained {'model' if args.train_mode == 'full' else 'adapter'} to {args.model_dir}",
        )


# ---- the run ----------------------------------------------------------------------------


def memory_gib(torch, device):
    if device.type != "cuda":
        return None, None
    gib = float(1 << 30)
    return (
        round(torch.cuda.max_memory_allocated(device) / gib, 3),
        round(torch.cuda.max_memory_reserved(device) / gib, 3),
    )


def train(args):
    import torch
    import torch.distributed as dist

    rank, _, world, device = init_distributed(torch)
    torch.manual_seed(args.seed)
    setup = resolve_setup(args, world)
    mesh = device_mesh(setup, device)
    gpu, capability = describe_device(torch, device)
    model = load_model(args, torch, device)
    setup["compute_applied"] = setup["compute"]
    if args.precision in LOW_PRECISION:
        setup["compute_applied"] = apply_low_precision(args, model, torch, capability)
    if setup["tensor_parallel"] > 1:
        apply_tensor_parallel(args, model, mesh["tp"])
    setup["recomputed_layers"] = apply_checkpointing(args, model, torch)
    setup["layers"] = len(decoder_layers(model)[2])
    model = with_loss(args, model, torch)
    model = shard_model(args, setup, model, torch, device, mesh)
    reference = None
    if setup["reference"] == "frozen copy":
        reference = frozen_reference(args, setup, load_reference(args, torch), torch, device, mesh)
    optimizer = make_optimizer(args, model, torch, device, setup)
    setup["local_parameters"] = local_parameters(model)
    log(
        rank,
        f"Train Planner: {gpu} x {world} (world size {world}), {setup['compute_applied']}, "
        f"{setup['strategy']} (shard group {setup['shard_group']}), torch {torch.__version__}",
    )
    log(rank, SETUP_TAG + " " + json.dumps(setup, sort_keys=True))
    start = resume(args, model, optimizer, rank)
    # The ranks of one tensor-parallel group (consecutive) read the same tokens.
    first = start * args.gradient_accumulation_steps
    if args.stage == "dpo":
        pairs = load_pairs(args, rank, setup["data_parallel"])
        data = pair_batches(pairs, args.per_device_train_batch_size, first, torch)
    else:
        blocks = load_blocks(args, rank // setup["tensor_parallel"], setup["data_parallel"])
        data = batches(blocks, args.per_device_train_batch_size, first, torch)
    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if setup["compute"] == "autocast bf16"
        else contextlib.nullcontext()
    )
    offload = (
        torch.autograd.graph.save_on_cpu(pin_memory=device.type == "cuda")
        if args.activation_offloading
        else contextlib.nullcontext()
    )
    times, pending, loss_value = [], None, float("nan")
    model.train()
    for step in range(start + 1, args.max_steps + 1):
        began = time.perf_counter()
        loss = train_step(
            args,
            model,
            optimizer,
            data,
            device,
            autocast,
            offload,
            loss_context=loss_context(setup),
            reference=reference,
        )
        # The mean over the data-parallel ranks (a TP group's ranks hold the same loss).
        dist.all_reduce(loss)
        loss_value = loss.item() / world
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - began)
        if step % max(args.log_steps, 1) == 0 or step == args.max_steps:
            log(rank, f"step {step}/{args.max_steps} loss {loss_value:.4f} {times[-1]:.3f} s")
        if (args.save_steps and step % args.save_steps == 0) or step == args.max_steps:
            pending = save_checkpoint(args, model, optimizer, step, rank, pending)
    finish_save(pending, rank)
    dist.barrier()
    save_final(args, model, rank)
    report_measured(args, setup, gpu, times, start, torch, device, rank, loss_value)
    # Every rank done with its collectives before the group goes: a rank that
    # tore gloo down while another was still in one was seen to abort at exit
    # ("terminate called without an active exception", once in CI).
    dist.barrier()
    dist.destroy_process_group()


def loss_context(setup):
    """Tensor parallelism keeps the logits split over the vocabulary: the loss is computed
    split, in forward and backward (`loss_parallel`); otherwise nothing."""
    if setup["tensor_parallel"] > 1:
        from torch.distributed.tensor.parallel import loss_parallel

        return loss_parallel
    return contextlib.nullcontext


def train_step(
    args,
    model,
    optimizer,
    data,
    device,
    autocast,
    offload,
    mark=lambda phase: None,
    loss_context=contextlib.nullcontext,
    reference=None,
):
    """One optimizer step over the accumulated micro-batches; returns the loss as a tensor.
    `mark` names each phase as it starts (the memory oracle, tools/oracle, counts by phase);
    `loss_context` makes the context forward and backward run in (a fresh one each).
    DPO: each micro-batch is (ids, labels) of its pairs' rows; the reference's forward runs
    first, so its transient buffers are gone before the policy's activations are kept."""
    total = 0.0
    ga = args.gradient_accumulation_steps
    dpo = args.stage == "dpo"
    for micro in range(ga):
        batch = next(data)
        tokens, labels = (t.to(device) for t in batch) if dpo else (batch.to(device), None)
        sync = micro == ga - 1 or not hasattr(model, "no_sync")
        with contextlib.nullcontext() if sync else model.no_sync(), loss_context():
            if dpo:
                mark("reference")
                with autocast:
                    ref = reference_logps(model, reference, tokens, labels)
            mark("forward")
            with autocast, offload:
                if dpo:
                    loss = dpo_loss(model(tokens, labels), ref, args.beta) / ga
                else:
                    loss = model(tokens) / ga
            mark("backward")
            loss.backward()
        total = total + (loss.full_tensor() if hasattr(loss, "full_tensor") else loss).detach()
    mark("optimizer step")
    optimizer.step()
    mark("zero_grad")
    optimizer.zero_grad(set_to_none=True)
    return total


def report_measured(args, setup, gpu, times, start, torch, device, rank, loss_value):
    import torch.distributed as dist

    warm = min(3, len(times) // 2)
    steady = times[warm:] or times
    step_time = sorted(steady)[len(steady) // 2] if steady else None
    allocated, reserved = memory_gib(torch, device)
    mems = [None] * dist.get_world_size()
    dist.all_gather_object(mems, (allocated, reserved))
    # A tensor-parallel group of GPUs works on the same tokens; a DPO pair is two rows.
    rows = args.per_device_train_batch_size * (2 if args.stage == "dpo" else 1)
    tokens = (
        rows * args.gradient_accumulation_steps * args.max_seq_length / setup["tensor_parallel"]
    )
    line = {
        "v": LINE_VERSION,
        "plan": args.plan,
        "gpu": gpu,
        "world_size": setup["world_size"],
        "steps": len(times),
        "first_step": start + 1,
        "measured_steps": len(steady),
        "step_time_s": round(step_time, 6) if step_time else None,
        "tokens_per_second_per_gpu": round(tokens / step_time, 3) if step_time else None,
        "max_memory_allocated_gib": [m[0] for m in mems] if mems[0][0] is not None else None,
        "max_memory_reserved_gib": [m[1] for m in mems] if mems[0][1] is not None else None,
        "compute": setup["compute_applied"],
        "loss": round(loss_value, 5) if math.isfinite(loss_value) else None,
    }
    log(rank, MEASURED_TAG + " " + json.dumps(line, sort_keys=True))


def main(argv=None):
    args = parse_args(argv)
    try:
        train(args)
    except PlanError as e:
        print(f"train.py: {e}", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
