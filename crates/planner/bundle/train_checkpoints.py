"""Checkpoints (train.py's fourth part): saved to --output_dir, which SageMaker
syncs to S3, and resumed from the newest complete one after a restart."""

import glob
import os
import re

from train_plan import log

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
