"""The memory oracle: real PyTorch training steps, counted without a GPU.

For each plan of the grid (rows.py) it builds the real Hugging Face model from
a config (random weights, nothing downloaded) under FakeTensorMode, sets it up
with the launch bundle's own train.py (adapters, checkpointing, the loss
module, FSDP2 `fully_shard` with its mixed-precision policy, the optimizer),
and runs two full optimizer steps (forward, causal-LM loss, backward,
optimizer step). One rank of a world of N runs FSDP2 over PyTorch's fake
process group. Every live tensor storage is counted as CUDA's caching
allocator rounds it (multiples of 512 bytes); the peak of the second step is
what `torch.cuda.max_memory_allocated()` would report on that rank.

Usage (from the repository root, in target/torch):
    python tools/oracle/oracle.py [--smoke] [--only ID] [--out FILE] [--check FILE]
"""

import argparse
import contextlib
import gc
import importlib.util
import json
import multiprocessing
import os
import platform
import sys
import time
import types
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRAIN_PY = os.path.join(ROOT, "crates", "planner", "bundle", "train.py")
TABLE = os.path.join(ROOT, "crates", "planner", "data", "oracle_memory.jsonl")
# memory_examples.csv's CUDA-measured steps as the oracle counts them (--reproduce).
REPRODUCTION = os.path.join(ROOT, "crates", "planner", "data", "oracle_reproduction.jsonl")
# Rows the memory model was never changed on (--heldout): its out-of-sample error.
HELDOUT = os.path.join(ROOT, "crates", "planner", "data", "oracle_heldout.jsonl")

sys.path.insert(0, HERE)
import rows as grid  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensor  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_map_only  # noqa: E402

# c10/cuda/CUDACachingAllocator.cpp: every block is a multiple of 512 bytes.
ALLOCATOR_ROUNDING = 512


def load_train_py():
    """train.py and the modules beside it it imports, as one namespace (`train.<function>`)."""
    bundle = os.path.dirname(TRAIN_PY)
    if bundle not in sys.path:
        sys.path.insert(0, bundle)
    merged = types.SimpleNamespace()
    for name in ("train_plan", "train_model", "train_data", "train_checkpoints"):
        merged.__dict__.update(vars(importlib.import_module(name)))
    spec = importlib.util.spec_from_file_location("bundle_train", TRAIN_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    merged.__dict__.update(vars(module))
    return merged


# ---- counting live storages ---------------------------------------------------------------


def storages(t):
    """The storages behind a tensor, through wrapper subclasses (DTensor, torchao's)."""
    if hasattr(t, "__tensor_flatten__") and type(t) is not torch.Tensor and not _is_fake(t):
        names, _ = t.__tensor_flatten__()
        return [s for n in names for s in storages(getattr(t, n))]
    return [t.untyped_storage()]


def _is_fake(t):
    return isinstance(t, FakeTensor)


class Allocations(TorchDispatchMode):
    """Bytes held by live storages, rounded as the caching allocator rounds them, and the peak.

    Storages are seen when an op returns them and dropped when Python frees them (weak
    references); `UntypedStorage.resize_` (FSDP2 frees and re-allocates its unsharded
    parameters that way) is not an op, so it is patched while counting."""

    def __init__(self, rounding=ALLOCATOR_ROUNDING, explain=False):
        super().__init__()
        self.explain = explain  # keep what made each live storage, and the set alive at the peak
        self.made_by = {}
        self.at_peak = None
        self.op = "?"
        self.peak_op = "?"
        self.rounding = rounding
        self.live = {}  # id(storage) -> (weakref, bytes)
        self.current = 0
        self.peak = 0
        self.phase = "setup"
        self.peak_phase = "setup"

    def rounded(self, nbytes):
        r = self.rounding
        return 0 if nbytes == 0 else -(-nbytes // r) * r

    def add(self, st):
        key = id(st)
        entry = self.live.get(key)
        if entry is not None and entry[0]() is st:
            return
        size = self.rounded(st.nbytes())
        self.live[key] = (weakref.ref(st, lambda _ref, k=key: self.free(k)), size)
        if self.explain:
            self.made_by[key] = f"{self.phase}: {self.op}"
        self.grow(size)

    def free(self, key):
        entry = self.live.pop(key, None)
        if entry is not None:
            self.current -= entry[1]

    def resized(self, st):
        key = id(st)
        entry = self.live.get(key)
        if entry is None or entry[0]() is not st:
            return self.add(st)
        size = self.rounded(st.nbytes())
        self.live[key] = (entry[0], size)
        self.grow(size - entry[1])

    def grow(self, delta):
        self.current += delta
        if self.current > self.peak:
            self.peak = self.current
            self.peak_phase = self.phase
            if self.explain and self.phase != "setup":
                self.at_peak = [(self.made_by.get(k, "?"), v[1]) for k, v in self.live.items()]
                self.peak_op = self.op

    def mark(self, phase):
        """train.train_step names each phase as it starts."""
        self.phase = phase

    def reset_peak(self):
        gc.collect()
        self.peak = self.current
        self.peak_phase = self.phase

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.op = str(func)
        tree_map_only(torch.Tensor, lambda t: [self.add(s) for s in storages(t)], out)
        return out

    @contextlib.contextmanager
    def counting(self):
        original = torch.UntypedStorage.resize_
        tracker = self

        def resize_(st, size):
            result = original(st, size)
            tracker.resized(st)
            return result

        torch.UntypedStorage.resize_ = resize_
        try:
            with self:
                yield self
        finally:
            torch.UntypedStorage.resize_ = original


# ---- attention as CUDA runs it ------------------------------------------------------------


class CudaFlashAttention(torch.autograd.Function):
    """Causal SDPA in 16 bits with grouped KV heads, as CUDA's flash kernel runs it. CPU has
    no such kernel (SDPA falls back to its math path, `s x s` scores per head), and under
    FakeTensorMode values are fake: this makes the tensors the CUDA kernel makes. Forward
    keeps q, k, v (KV heads not repeated), the output and the fp32 log-sum-exp (b x h x s);
    backward makes dq, dk, dv and flash-attn 2's workspaces: the fp32 dq accumulator,
    softmax_d (fp32, b x h x s) and, for grouped heads, dk and dv over every query head
    before they are summed (flash-attn csrc/flash_attn/flash_api.cpp, mha_bwd)."""

    @staticmethod
    def forward(ctx, q, k, v):
        out = torch.empty_like(q)
        lse = q.new_empty(q.shape[:3], dtype=torch.float32)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        workspace = [q.new_empty(q.shape, dtype=torch.float32), lse.new_empty(lse.shape)]
        if k.shape[1] != q.shape[1]:
            expanded = (k.shape[0], q.shape[1]) + tuple(k.shape[2:])
            workspace += [k.new_empty(expanded), v.new_empty(expanded)]
        del workspace
        return dq, dk, dv


@contextlib.contextmanager
def cuda_attention_kernels(train):
    """SDPA's causal, mask-free 16-bit calls take CUDA's flash path (CudaFlashAttention);
    masked or FP32 ones run the CPU kernels, which keep what CUDA's efficient kernel keeps."""
    original = torch.nn.functional.scaled_dot_product_attention

    def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        dtype = train.sdpa_dtype(torch, q)
        flash = (
            attn_mask is None
            and is_causal
            and dropout_p == 0.0
            and dtype in (torch.bfloat16, torch.float16)
            and q.shape[-1] == k.shape[-1] == v.shape[-1] <= 256
        )
        if flash:
            # Autocast casts the inputs (new tensors, which the kernel keeps), as on CUDA.
            with torch.autocast("cpu", enabled=False):
                q, k, v = (t if t.dtype == dtype else t.to(dtype) for t in (q, k, v))
                return CudaFlashAttention.apply(q, k, v)
        return original(
            q,
            k,
            v,
            attn_mask=attn_mask,
            dropout_p=dropout_p,
            is_causal=is_causal,
            scale=scale,
            enable_gqa=enable_gqa,
        )

    torch.nn.functional.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = original


# ---- one plan ---------------------------------------------------------------------------


def train_args(train, row):
    """train.py's arguments for the row's plan (the names the launcher passes)."""
    p = row["plan"]
    argv = [
        "--model_id",
        "oracle",
        "--max_seq_length",
        str(p["seq"]),
        "--per_device_train_batch_size",
        str(p["mb"]),
        "--gradient_accumulation_steps",
        str(p.get("ga", 1)),
        "--precision",
        p["precision"],
        "--checkpointing",
        p["ckpt"],
        "--attn_implementation",
        "eager" if p["attn"] == "eager" else "sdpa",
        "--loss",
        p["loss"],
        "--optim",
        p["optimizer"],
        "--max_steps",
        "2",
        "--train_mode",
        p.get("train", "full"),
        "--lora_r",
        str(p.get("lora_rank", 16)),
        "--lora_targets",
        p.get("lora_targets", "all-linear"),
        "--lora_dtype",
        p.get("lora_dtype", "fp32"),
        "--zero_stage",
        str(p.get("zero", 0)),
        "--shard_degree",
        str(p.get("shard", 0)),
        "--planned_world_size",
        str(row["world"]),
        "--tp",
        str(p.get("tp", 1)),
        "--sequence_parallel",
        str(p.get("sp", 0) == 1),
        # GRPO's update runs train.py's model, sharding and optimizer with TRL's loss (grpo_step).
        "--stage",
        "sft" if p.get("stage") == "grpo" else p.get("stage", "sft"),
    ]
    return train.parse_args(argv)


def build_model(train, args, config, torch):
    """train.load_model without the download: the same dtype choice and adapters."""
    from transformers import AutoModelForCausalLM

    dtype = train.weights_dtype(args, torch)
    train.attention_as_planned(torch)
    model = AutoModelForCausalLM.from_config(
        config, attn_implementation=args.attn_implementation, **{train.dtype_key(): dtype}
    )
    model.config.use_cache = False
    if args.train_mode != "full":
        model = train.add_adapters(args, model)
    return model


@contextlib.contextmanager
def real_device_mesh():
    """`init_device_mesh` reads its rank layout from a real tensor: build it, and the
    sub-meshes sliced from it, outside fake mode."""
    import torch.distributed.device_mesh as dm
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    original, getitem = dm.init_device_mesh, dm.DeviceMesh.__getitem__

    def init_device_mesh(*args, **kwargs):
        with unset_fake_temporarily():
            return original(*args, **kwargs)

    def submesh(self, names):  # train.py's mesh["tp"], mesh["replicate", "shard"]
        with unset_fake_temporarily():
            return getitem(self, names)

    dm.init_device_mesh, dm.DeviceMesh.__getitem__ = init_device_mesh, submesh
    try:
        yield
    finally:
        dm.init_device_mesh, dm.DeviceMesh.__getitem__ = original, getitem


def run_rank(train, row, rank, steps=2):
    """Peak bytes and its phase for one rank of the row's world, counted over the last step."""
    import torch.distributed._tools.fake_collectives  # noqa: F401  (fake c10d collectives)
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from transformers import AutoConfig

    world = row["world"]
    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
    try:
        args = train_args(train, row)
        setup = train.resolve_setup(args, world)
        config = AutoConfig.for_model(**row["config"])
        counter = Allocations(explain=EXPLAIN)
        # DTensor's sharding rules read the device mesh's (real, tiny) rank tensor:
        # tensor-parallel rows let it in; the model and its data are built fake either way.
        fake = FakeTensorMode(allow_non_fake_inputs=setup["tensor_parallel"] > 1)
        with real_device_mesh(), cuda_attention_kernels(train), fake, counter.counting():
            torch.manual_seed(0)
            mesh = train.device_mesh(setup, torch.device("cpu"))
            model = build_model(train, args, config, torch)
            if setup["tensor_parallel"] > 1:
                train.apply_tensor_parallel(args, model, mesh["tp"])
            train.apply_checkpointing(args, model, torch)
            grpo = row["plan"].get("stage") == "grpo"
            if not grpo:
                model = train.with_loss(args, model, torch)
            model = train.shard_model(args, setup, model, torch, torch.device("cpu"), mesh)
            reference = None
            if setup["reference"] == "frozen copy":
                reference = train.frozen_reference(
                    args,
                    setup,
                    build_reference(train, args, config),
                    torch,
                    torch.device("cpu"),
                    mesh,
                )
            optimizer = train.make_optimizer(args, model, torch, torch.device("cpu"), setup)
            autocast = (
                torch.autocast("cpu", dtype=torch.bfloat16)
                if setup["compute"] == "autocast bf16"
                else contextlib.nullcontext()
            )
            model.train()
            # Reference cycles are freed only when the cyclic collector runs, and when it
            # runs depends on what the process did before: collect by hand, at fixed points.
            gc.disable()
            try:
                for step in range(steps):
                    if step == steps - 1:
                        counter.phase = "between steps"
                        counter.reset_peak()
                    if grpo:
                        grpo_step(
                            row["plan"],
                            args,
                            model,
                            optimizer,
                            autocast,
                            counter.mark,
                            config.vocab_size,
                        )
                        continue
                    data = random_tokens(args, config.vocab_size)
                    train.train_step(
                        args,
                        model,
                        optimizer,
                        data,
                        torch.device("cpu"),
                        autocast,
                        contextlib.nullcontext(),
                        mark=counter.mark,
                        loss_context=train.loss_context(setup),
                        reference=reference,
                    )
            finally:
                gc.enable()
            gc.collect()
            result = {"peak_bytes": counter.peak, "phase": counter.peak_phase}
            if EXPLAIN:
                explain(counter)
            del model, optimizer, reference
        return result
    finally:
        dist.destroy_process_group()


def random_tokens(args, vocab):
    """train.py's data for one step: micro-batches of `max_seq_length + 1` token ids; for DPO
    (ids, labels) of both rows of every pair (train.pair_batches), the first half of each
    row a prompt (labels -100)."""
    rows, seq = args.per_device_train_batch_size, args.max_seq_length
    if args.stage != "dpo":
        shape = (rows, seq + 1)
        return iter(
            [torch.randint(0, vocab, shape) for _ in range(args.gradient_accumulation_steps)]
        )
    out = []
    for _ in range(args.gradient_accumulation_steps):
        ids = torch.randint(0, vocab, (2 * rows, seq + 1))
        labels = ids[:, 1:].clone()
        labels[:, : seq // 2] = -100
        out.append((ids, labels))
    return iter(out)


def grpo_step(plan, args, model, optimizer, autocast, mark, vocab):
    """One GRPO update as TRL 0.24.0's GRPOTrainer computes it (`_compute_loss` and
    `_get_per_token_logps_and_entropies`, with TRL's own selective_log_softmax and
    entropy_from_logits), on train.py's model, sharding and optimizer: per micro-batch of
    `mb` rows of `seq` tokens, the logits of the completion's C + 1 last positions,
    upcast to fp32 as accelerate's mixed-precision forward returns them, divided by the
    temperature, their log-probabilities and entropies; the clipped token-level loss with
    group advantages (the old log-probabilities are these, detached: num_iterations = 1),
    normalised by the completion tokens (loss_type "dapo"). The scoring forwards before it
    run without gradients and keep only (rows, C) log-probabilities: not counted."""
    rows, seq, c = args.per_device_train_batch_size, args.max_seq_length, plan["completion"]
    ga = args.gradient_accumulation_steps
    for _micro in range(ga):
        ids = torch.randint(0, vocab, (rows, seq))
        advantages = torch.randn(rows)
        mark("forward")
        with autocast:
            logps = per_token_logps(model, ids, c)
            ratio = torch.exp(logps - logps.detach())
            clipped = torch.clamp(ratio, 0.8, 1.2)
            per_token = -torch.min(ratio * advantages[:, None], clipped * advantages[:, None])
            loss = per_token.sum() / (rows * c) / ga
        mark("backward")
        loss.backward()
    mark("optimizer step")
    optimizer.step()
    mark("zero_grad")
    optimizer.zero_grad(set_to_none=True)


def per_token_logps(model, ids, c):
    """TRL's `_get_per_token_logps_and_entropies`: its logits die when it returns, before
    the backward."""
    from trl.trainer.utils import entropy_from_logits, selective_log_softmax

    logits = model(input_ids=ids, logits_to_keep=c + 1).logits.float()
    logits = logits[:, :-1, :] / 1.0  # TRL divides by the temperature (1.0)
    logps = selective_log_softmax(logits, ids[:, -c:])
    with torch.no_grad():
        entropy_from_logits(logits)
    return logps


def build_reference(train, args, config):
    """train.load_reference without the download: the full model in BF16 (FP32 in FP32)."""
    from transformers import AutoModelForCausalLM

    dtype = torch.float32 if args.precision == "fp32" else torch.bfloat16
    lm = AutoModelForCausalLM.from_config(
        config, attn_implementation=args.attn_implementation, **{train.dtype_key(): dtype}
    )
    lm.config.use_cache = False
    return lm


def ranks_to_run(row):
    """Rank 0; also the last rank for the smoke rows and whole models. FSDP2 pads every
    shard to the same size, so the ranks of a data-parallel job should agree: the table
    keeps both where both ran, and the larger is the row's peak."""
    last = row["world"] - 1
    # Whole models at real sizes take minutes a rank: rank 0 alone (the 16-layer rows and
    # the smoke rows show the ranks agree).
    real_size = grid.is_whole_model(row["id"])
    both = (row["id"] in grid.SMOKE and not real_size) or "16-layers" in row["id"]
    return [0, last] if both and last > 0 else [0]


def measure(row, train=None):
    train = train or TRAIN
    began = time.perf_counter()
    peaks = {r: run_rank(train, row, r) for r in ranks_to_run(row)}
    top = max(peaks.values(), key=lambda p: p["peak_bytes"])
    return {
        "id": row["id"],
        "group": row["group"],
        "config": config_name(row["config"]),
        "plan": row["plan"],
        "world": row["world"],
        "peak_bytes": top["peak_bytes"],
        "peak_phase": top["phase"],
        "rank_peaks": {str(r): p["peak_bytes"] for r, p in peaks.items()},
        "seconds": round(time.perf_counter() - began, 1),
    }


def full_config(keys):
    """The whole config Transformers built (its defaults included, e.g. Gemma 2's sliding
    window), so the planner reads the shape the oracle ran."""
    from transformers import AutoConfig

    return json.loads(AutoConfig.for_model(**keys).to_json_string(use_diff=False))


def config_name(keys):
    """Rows name their config; the table's first line holds each one in full."""
    return f"{keys['model_type']}-{keys['hidden_size']}x{keys['num_hidden_layers']}"


def versions():
    import peft
    import transformers

    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "python": platform.python_version(),
        "rounding_bytes": ALLOCATOR_ROUNDING,
        "steps": 2,
        "device": "cpu kernels under FakeTensorMode (causal 16-bit SDPA as CUDA's flash kernel: CudaFlashAttention; other SDPA on the CPU's kernels; CPU autocast)",
    }


TRAIN = None
EXPLAIN = False


def explain(counter):
    """What was alive at the peak, by the op (and phase) that made it."""
    from collections import Counter

    sums, counts = Counter(), Counter()
    for who, size in counter.at_peak or []:
        sums[who] += size
        counts[who] += 1
    print(f"  peak while {counter.peak_phase}, after {counter.peak_op}")
    for who, size in sums.most_common(25):
        print(f"  {size / 2**20:>10.1f} MiB  x{counts[who]:<4} {who}")


def init_worker():
    """Load every library a row may use before any row is counted: an import inside a
    counted step would add its module-level tensors to that row (and only to the first
    row of a worker that needs it), so rows would depend on what ran before them."""
    global TRAIN
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch.set_num_threads(1)
    TRAIN = load_train_py()
    import peft  # noqa: F401
    import transformers.masking_utils  # noqa: F401
    from transformers import AutoConfig, AutoModelForCausalLM  # noqa: F401

    for keys in grid.FAMILIES.values():
        AutoModelForCausalLM.from_config(
            AutoConfig.for_model(
                **dict(
                    keys,
                    num_hidden_layers=1,
                    vocab_size=64,
                    hidden_size=64,
                    intermediate_size=64,
                    num_attention_heads=2,
                    num_key_value_heads=1,
                    head_dim=32,
                )
            )
        )


def report_row(i, n, row, m):
    versus = ""
    if "measured" in row:
        m["measured"] = row["measured"]
        error = 100 * (m["peak_bytes"] / row["measured"] - 1)
        versus = f" measured {row['measured'] / 2**20:.1f} MiB {error:+.2f}%"
    print(
        f"[{i}/{n}] {m['id']:<56} {m['peak_bytes'] / 2**20:>10.1f} MiB "
        f"({m['peak_phase']}, {m['seconds']} s){versus}",
        flush=True,
    )


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--smoke", action="store_true", help="only the smoke subset (what CI runs)")
    ap.add_argument("--only", help="one row id")
    ap.add_argument(
        "--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes"
    )
    ap.add_argument(
        "--out", help=f"write the table here (the full grid writes {os.path.relpath(TABLE, ROOT)})"
    )
    ap.add_argument(
        "--reproduce",
        action="store_true",
        help="run data/memory_examples.csv's measured steps and print the oracle's error",
    )
    ap.add_argument(
        "--heldout",
        action="store_true",
        help="the held-out plans (rows.heldout), written to data/oracle_heldout.jsonl",
    )
    ap.add_argument(
        "--check", help="compare the measured rows with this table's and fail on any difference"
    )
    ap.add_argument("--explain", action="store_true", help="with --only: what is alive at the peak")
    ap.add_argument(
        "--missing",
        action="store_true",
        help="measure only the grid's rows the table lacks, and write the table with them",
    )
    a = ap.parse_args()
    if a.missing and (a.smoke or a.only or a.check or a.out):
        ap.error("--missing completes the whole table: no --smoke, --only, --check or --out")
    if a.explain:
        global EXPLAIN
        EXPLAIN = True
        a.jobs = 0
    rows = grid.reproductions() if a.reproduce else grid.heldout() if a.heldout else grid.rows()
    if a.smoke:
        rows = [r for r in rows if r["id"] in grid.SMOKE]
    if a.only:
        rows = [r for r in rows if r["id"] == a.only]
    kept = {}
    table = REPRODUCTION if a.reproduce else HELDOUT if a.heldout else TABLE
    if a.missing:
        with open(table) as f:
            kept = {r["id"]: r for r in map(json.loads, f) if "id" in r}
        every, rows = rows, [r for r in rows if r["id"] not in kept]
    out = a.out or (
        None
        if (a.smoke or a.only or a.check)
        else (REPRODUCTION if a.reproduce else HELDOUT if a.heldout else TABLE)
    )
    measured, began = [], time.perf_counter()
    if a.jobs == 0:
        init_worker()
        results = map(measure, rows)
    else:
        # A fresh process a row: DTensor caches sharding decisions by shape across models.
        pool = multiprocessing.get_context("spawn").Pool(
            a.jobs, initializer=init_worker, maxtasksperchild=1
        )
        results = pool.imap(measure, rows)
    for i, (row, m) in enumerate(zip(rows, results, strict=True), 1):
        report_row(i, len(rows), row, m)
        measured.append(m)
    print(f"oracle: {len(measured)} rows in {time.perf_counter() - began:.0f} s", flush=True)

    if a.missing:
        new = {m["id"]: m for m in measured}
        rows, measured = every, [new.get(r["id"]) or dict(kept[r["id"]], seconds=0) for r in every]
        out = table
    if out:
        with open(out, "w") as f:
            configs = {config_name(r["config"]): full_config(r["config"]) for r in rows}
            head = {"versions": versions(), "command": "./dev oracle", "configs": configs}
            f.write(json.dumps(head, sort_keys=True) + "\n")
            for m in measured:
                m.pop("seconds")
                f.write(json.dumps(m, sort_keys=True) + "\n")
        print(f"wrote {out}")
    if a.check:
        return check(measured, a.check)
    return 0


# A row re-measured in another process may differ by a few small blocks (PEFT and its
# dependencies cache small tensors on first use, so a row's count depends by a KiB or two
# on the rows its worker ran before); anything larger is a changed model, script or library.
CHECK_TOLERANCE_BYTES = 16 << 10


def check(measured, path):
    """Each re-measured row must equal the table's (within CHECK_TOLERANCE_BYTES): the table
    is the oracle's, not edited, and train.py and the pinned libraries have not changed it."""
    with open(path) as f:
        table = {r["id"]: r for r in map(json.loads, f) if "id" in r}
    bad = 0
    for m in measured:
        want = table.get(m["id"])
        if want is None or abs(want["peak_bytes"] - m["peak_bytes"]) > CHECK_TOLERANCE_BYTES:
            bad += 1
            print(
                f"MISMATCH {m['id']}: table {want and want['peak_bytes']} oracle {m['peak_bytes']}"
            )
    print(f"oracle-check: {len(measured) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
