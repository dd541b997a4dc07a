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

The script is this file and the four modules beside it, one idea each:
train_plan.py (the arguments and the setup they give), train_model.py (the
model, its adapters, precision, checkpointing, parallelism and optimizer),
train_data.py (the data and the losses) and train_checkpoints.py.

Every run ends by printing one line that starts with TRAIN_PLANNER_MEASURED:
paste it into the planner (page, or `plan report '<plan>' --measured '<line>'`)
to compare measured with predicted and to re-base time and cost.
"""

import contextlib
import json
import math
import sys
import time

from train_checkpoints import finish_save, resume, save_checkpoint, save_final
from train_data import (
    batches,
    dpo_loss,
    frozen_reference,
    load_blocks,
    load_pairs,
    load_reference,
    pair_batches,
    reference_logps,
    with_loss,
)
from train_model import (
    apply_checkpointing,
    apply_low_precision,
    apply_tensor_parallel,
    decoder_layers,
    describe_device,
    device_mesh,
    init_distributed,
    load_model,
    local_parameters,
    make_optimizer,
    shard_model,
)
from train_plan import (
    LINE_VERSION,
    LOW_PRECISION,
    MEASURED_TAG,
    SETUP_TAG,
    PlanError,
    log,
    parse_args,
    resolve_setup,
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
