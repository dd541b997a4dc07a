"""The model as the plan trains it (train.py's second part): the process
group and device, the weights and attention kernel, adapters, low precision,
activation checkpointing, tensor parallelism, sharding and the optimizer."""

import os

from train_plan import PlanError, lora_target_names

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
