#!/usr/bin/env python3
"""Trains with the launch bundle's script, on CPU, for fourteen varied plans (two of them DPO),
and with grpo.py for two GRPO plans.

For each plan: `plan export '<plan>' --format bundle` writes the bundle; the
hyperparameters are read out of its launch.py (what SageMaker would pass);

  1. one plan, one truth: train.py's resolve_setup() on the planned world size
     must take exactly the planner's sharding group, ZeRO stage, precision and
     compute path, checkpointing, loss, attention, adapters and batch;
  2. the script trains a tiny model made from a config (random weights, no
     download) on a tiny JSON Lines file for a few steps, as one process or as
     two under torchrun (gloo, FSDP2), scaled down (sequence, accumulation);
  3. its TRAIN_PLANNER_MEASURED line, pasted back with `plan report --measured`,
     re-bases time and cost by the arithmetic the README states.

Then: FSDP 2 x TP 2 with sequence parallelism, and HSDP 2 x 2, each on four
ranks, train as one process does (step-1 loss within 2e-4 in FP32, the loss
falls over 5 steps, each rank holds its share of the parameters); a resumed
run continues from the checkpoint the first one wrote, FP8 on
a CPU stops with a message (and trains with --fp8_fallback True), train.py's
DPO equals TRL's DPOTrainer on the same pairs (ids, log-probabilities, loss,
gradients), and a malformed or foreign line gets a clear message.

Prints one closing line: "bundle: N passed, M failed".
"""

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fixture  # noqa: E402

PLAN = os.environ.get("PLAN_BIN", "target/debug/plan")
WORK = os.environ.get("BUNDLE_WORK", "target/bundle-test")

# (plan, launcher): dense and MoE, full/LoRA/QLoRA, BF16/FP8, FSDP on 1-4 nodes, spot.
PLANS = [
    ("model=llama-3.1-8b", "pytorch"),
    (
        "model=llama-3.1-8b&train=lora&lora_rank=32&lora_alpha=16&lora_targets=q,v&save=adapter&spot=1",
        "huggingface",
    ),
    (
        "model=llama-3.1-8b&train=qlora&zero=0&instance=ml.g5.2xlarge&optimizer=adamw8bit&ckpt=full",
        "huggingface",
    ),
    (
        "model=llama-3.1-70b&instance=ml.p5.48xlarge&nodes=4&shard=8&precision=fp8&ckpt=full&loss=fused&spot=1",
        "modeltrainer",
    ),
    ("model=qwen2.5-7b&precision=mxfp8&ckpt=selective&nodes=2", "pytorch"),
    (
        "model=llama-3.2-1b&precision=bf16-pure&zero=2&optimizer=adamw-foreach&attn=eager&ckpt=op&seq=2048",
        "modeltrainer",
    ),
    ("model=gemma-2-9b&zero=1&ckpt=0.5&async_save=1&instance=ml.p4de.24xlarge", "pytorch"),
    (
        "model=mistral-7b-v0.3&train=lora&ckpt=full&instance=ml.g6e.12xlarge&nodes=2&lora_dtype=bf16",
        "modeltrainer",
    ),
    ("model=mixtral-8x7b&nodes=4&ckpt=full&loss=fused&instance=ml.p5en.48xlarge", "pytorch"),
    ("model=qwen3-30b-a3b&train=lora&nodes=2&ckpt=full&offload=1&async_save=1", "huggingface"),
    # Tensor parallelism under FSDP2 (#37): with sequence parallelism, and without on HSDP.
    ("model=llama-3.1-70b&tp=4&sp=1&nodes=2&ckpt=full&seq=16384", "pytorch"),
    ("model=qwen2.5-7b&tp=2&zero=3&shard=4&nodes=2&loss=fused", "modeltrainer"),
    # DPO (#38): a frozen reference sharded beside the policy; LoRA's adapters switched off.
    ("model=llama-3.1-8b&stage=dpo&seq=2048&mb=2&ckpt=full", "pytorch"),
    (
        "model=qwen2.5-7b&stage=dpo&train=lora&lora_targets=q,v&zero=0&instance=ml.g6e.2xlarge&seq=1024",
        "huggingface",
    ),
]
MOE = ("mixtral", "qwen3-30b-a3b")
# GRPO (#38): grpo.py, TRL's GRPOTrainer; FSDP2 with vLLM over two GPUs, and LoRA + a reference on DDP.
GRPO_PLANS = [
    (
        "model=qwen2.5-7b&stage=grpo&seq=1280&completion=1024&mb=4&ga=8&instance=ml.p5.48xlarge&zero=3&ckpt=full",
        "pytorch",
    ),
    (
        "model=llama-3.1-8b&stage=grpo&train=lora&lora_targets=q,v&beta=0.04&generations=4&mb=4&ga=2&zero=0"
        "&instance=ml.g6e.12xlarge&seq=1024&completion=512&gen_share=0.4&sleep=1",
        "huggingface",
    ),
    # vLLM as a server on 2 of the node's 8 GPUs, training on the other 6.
    (
        "model=qwen2.5-1.5b&stage=grpo&seq=1024&completion=512&mb=4&ga=4&zero=3&ckpt=full"
        "&instance=ml.p5.48xlarge&gen_gpus=2",
        "modeltrainer",
    ),
]
RESULTS = []


def case(name):
    def wrap(fn):
        def run(*a):
            try:
                fn(*a)
                RESULTS.append((name, None))
                print(f"ok   {name}", flush=True)
            except Exception as e:  # noqa: BLE001 (report and go on)
                RESULTS.append((name, e))
                print(f"FAIL {name}: {e}", flush=True)
                traceback.print_exc(file=sys.stderr)

        return run

    return wrap


def plan_cli(*args, check=True):
    r = subprocess.run([PLAN, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"plan {args[0]} exited {r.returncode}: {r.stderr.strip()}")
    return r


def hyperparameters(launch_py):
    """The `hyperparameters = {...}` dict of launch.py, as SageMaker would read it."""
    tree = ast.parse(open(launch_py).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "hyperparameters":
            return ast.literal_eval(node.value)
    raise AssertionError("launch.py has no hyperparameters dict")


def as_argv(hp):
    """SageMaker hands hyperparameters to the entry point as `--name value` strings."""
    argv = []
    for k, v in hp.items():
        argv += [f"--{k}", str(v)]
    return argv


def load_script(path):
    """A bundle script as a module; the modules beside it import as they do in the job."""
    here = os.path.dirname(os.path.abspath(path))
    if here not in sys.path:
        sys.path.insert(0, here)
    name = "bundle_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TRAIN_FILES = [
    "scripts/train.py",
    "scripts/train_checkpoints.py",
    "scripts/train_data.py",
    "scripts/train_model.py",
    "scripts/train_plan.py",
]


def plan_keys(report):
    """The report's normalised query as a dict (every key is written)."""
    return dict(kv.split("=", 1) for kv in report["query"].split("&"))


def expected_setup(report):
    """What the planner modelled, in resolve_setup's words."""
    plan = plan_keys(report)
    layout = report["layout"]
    zero = int(plan["zero"]) if layout["gpus"] > 1 else 0
    fsdp = zero >= 2 and layout["gpus"] > 1
    return {
        "world_size": layout["gpus"],
        "data_parallel": layout["dp"],
        "tensor_parallel": layout["tp"],
        "sequence_parallel": layout["tp"] > 1 and plan["sp"] == "1",
        "zero_stage": zero,
        "shard_group": layout["shard"] if fsdp else 1,
        "replicas": layout["dp"] // layout["shard"] if fsdp else layout["dp"],
        "precision": plan["precision"],
        "compute": report["memory"]["compute"],
        "checkpointing": plan["ckpt"],
        "activation_offloading": plan["offload"] == "1",
        "attention": {"flash": "sdpa", "eager": "eager"}[plan["attn"]],
        "loss": plan["loss"],
        "train_mode": plan["train"],
        "lora_r": int(plan.get("lora_rank", 0)) if plan["train"] != "full" else 0,
        "lora_alpha": (
            int(plan.get("lora_alpha", 2 * int(plan.get("lora_rank", 0))))
            if plan["train"] != "full"
            else 0
        ),
        "lora_targets": plan.get("lora_targets") if plan["train"] != "full" else None,
        "lora_dtype": (plan.get("lora_dtype", "fp32") if plan["precision"] != "fp32" else "fp32")
        if plan["train"] != "full"
        else None,
        "optim": plan["optimizer"],
        "micro_batch": int(plan["mb"]),
        "grad_accum": int(plan["ga"]),
        "seq": int(plan["seq"]),
        "stage": plan.get("stage", "sft"),
        "reference": (
            None
            if plan.get("stage", "sft") == "sft"
            else "frozen copy"
            if plan["train"] == "full"
            else "adapters off"
        ),
    }


def run_script(script, argv, world, env_extra=None):
    py = sys.executable
    if world > 1:
        cmd = [py, "-m", "torch.distributed.run", "--nproc_per_node", str(world), script, *argv]
    else:
        cmd = [py, script, *argv]
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", **(env_extra or {}))
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    # A CPU rank of torchrun sometimes aborts in C++ on this machine ("terminate called without
    # an active exception", SIGABRT) in a run that otherwise trains: 2 of 3 CI runs on
    # 2026-12-07, in different cases. Its cause is not found yet; the run is tried once more,
    # and says so, rather than failing CI at random.
    if world > 1 and run.returncode != 0 and GLOO_ABORT in run.stderr:
        print(f"retried: {os.path.basename(script)} x {world} aborted in C++ (SIGABRT)", flush=True)
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    return run


GLOO_ABORT = "terminate called without an active exception"


def measured_line(out):
    lines = [line for line in out.splitlines() if line.startswith("TRAIN_PLANNER_MEASURED ")]
    assert len(lines) == 1, f"expected one measured line, got {len(lines)}"
    return lines[0]


def small_argv(hp, model_dir, data_dir, out_dir, steps):
    """The launcher's hyperparameters, scaled down for a CPU: short sequences, little accumulation."""
    hp = dict(hp)
    if int(hp.get("tp", 1)) > 1:
        hp["tp"] = 2
    hp.update(
        model_id=model_dir,
        max_seq_length=64,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=min(int(hp["gradient_accumulation_steps"]), 2),
        max_steps=steps,
        save_steps=2,
        log_steps=1,
    )
    return as_argv(hp) + [
        "--data_dir",
        data_dir,
        "--output_dir",
        out_dir,
        "--model_dir",
        os.path.join(out_dir, "model"),
    ]


def check_plan(i, query, launcher, models, data_dir, pairs_dir):
    bundle = os.path.join(WORK, f"plan{i}")
    shutil.rmtree(bundle, ignore_errors=True)
    plan_cli("export", query, "--format", "bundle", "--launcher", launcher, "--out", bundle)
    files = sorted(
        os.path.relpath(os.path.join(d, f), bundle) for d, _, fs in os.walk(bundle) for f in fs
    )
    assert files == ["README.md", "launch.py", "scripts/requirements.txt"] + TRAIN_FILES, files
    report = json.loads(plan_cli("report", query).stdout)
    hp = hyperparameters(os.path.join(bundle, "launch.py"))
    script = os.path.join(bundle, "scripts", "train.py")
    train = load_script(script)

    @case(f"plan {i} one truth: {query}")
    def one_truth():
        args = train.parse_args(
            as_argv(hp) if "model_id" in hp else as_argv(hp) + ["--model_id", "x"]
        )
        setup = train.resolve_setup(args, report["layout"]["gpus"])
        want = expected_setup(report)
        diff = {k: (setup.get(k), v) for k, v in want.items() if setup.get(k) != v}
        assert not diff, f"train.py (got, planner) differ: {diff}"
        assert setup["reshard_after_forward"] == (want["zero_stage"] == 3)

    one_truth()
    model = models["mixtral" if any(m in query for m in MOE) else "llama"]
    # Scaled down: two ranks, or FSDP 2 x TP 2 for a tensor-parallel plan.
    world = 1 if report["layout"]["gpus"] == 1 else (4 if report["layout"]["tp"] > 1 else 2)
    low_precision = hp["precision"] in ("fp8", "mxfp8", "nvfp4")
    out_dir = tempfile.mkdtemp(prefix=f"run{i}-", dir=WORK)

    @case(f"plan {i} trains ({world} process{'es' if world > 1 else ''})")
    def trains():
        data = pairs_dir if hp.get("stage") == "dpo" else data_dir
        argv = small_argv(hp, model, data, out_dir, steps=4)
        if low_precision:
            r = run_script(script, argv, 1)
            assert r.returncode == 2, f"FP8 on a CPU should stop with exit 2, got {r.returncode}"
            assert "--fp8_fallback True" in r.stderr and "Traceback" not in r.stderr, r.stderr[
                -400:
            ]
            argv += ["--fp8_fallback", "True"]
        r = run_script(script, argv, world)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        line = measured_line(r.stdout)
        m = json.loads(line.split(" ", 1)[1])
        assert m["world_size"] == world and m["steps"] == 4 and m["tokens_per_second_per_gpu"] > 0
        assert m["plan"] == report["query"], "the line names the plan it was launched for"
        assert ("fallback" in m["compute"]) == low_precision
        saved = os.listdir(os.path.join(out_dir, "model"))
        want = "adapter_model.safetensors" if hp["train_mode"] != "full" else "model.safetensors"
        assert want in saved, saved
        check_rebase(query, report, line, m)
        with open(os.path.join(WORK, f"plan{i}.measured"), "w") as f:
            f.write(line + "\n")  # the page's e2e pastes this line back

    trains()


def check_rebase(query, report, line, m):
    """Time = tokens / (measured tokens/s per GPU x planned GPUs) + the predicted checkpoint time."""
    out = json.loads(plan_cli("report", query, "--measured", line).stdout)["measured"]
    keys = plan_keys(report)
    tokens = float(keys["tokens"])
    hours = tokens / (m["tokens_per_second_per_gpu"] * report["layout"]["gpus"]) / 3600
    hours += report["time"]["checkpoint_hours"]
    assert abs(out["hours"] - hours) <= 1e-9 * hours, (out["hours"], hours)
    price = report["cost"]["price_per_instance_hour"]
    if price is not None:
        nodes = int(keys["nodes"])
        assert abs(out["usd"] - price * nodes * hours) <= 1e-6 * out["usd"]
    assert any("cpu" in n["text"] for n in out["notes"]), "a CPU run is flagged as another GPU"


@case("resume: a second run continues from the newest checkpoint")
def resume(models, data_dir):
    out_dir = tempfile.mkdtemp(prefix="resume-", dir=WORK)
    bundle = os.path.join(WORK, "plan0")
    hp = hyperparameters(os.path.join(bundle, "launch.py"))
    script = os.path.join(bundle, "scripts", "train.py")
    first = run_script(script, small_argv(hp, models["llama"], data_dir, out_dir, steps=4), 2)
    assert first.returncode == 0, first.stderr[-2000:]
    second = run_script(script, small_argv(hp, models["llama"], data_dir, out_dir, steps=6), 2)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "resumed from" in second.stdout and "step-00000004" in second.stdout, second.stdout[
        -800:
    ]
    m = json.loads(measured_line(second.stdout).split(" ", 1)[1])
    assert m["first_step"] == 5 and m["steps"] == 2, m


def losses(out):
    """Each step's loss as train.py logs it (4 decimals: the mean over the data-parallel ranks)."""
    return [float(m.group(1)) for m in re.finditer(r"^step \d+/\d+ loss (\S+)", out, re.M)]


def setup_line(out):
    lines = [line for line in out.splitlines() if line.startswith("TRAIN_PLANNER_SETUP ")]
    assert len(lines) == 1, f"expected one setup line, got {len(lines)}"
    return json.loads(lines[0].split(" ", 1)[1])


def equals_one_process(models, data_dir, layout_args, data_parallel):
    """4 ranks of the bundle's train.py against one process that reads the same tokens (the
    data-parallel ranks' micro-batches together): FP32, so the step-1 losses agree to the
    logged 4 decimals (tolerance 2e-4); the loss falls over 5 steps; the ranks hold a
    quarter (FSDP 2 x TP 2) or half (HSDP 2 x 2) of the parameters."""
    script = os.path.join(WORK, "plan10", "scripts", "train.py")
    common = [
        "--model_id",
        models["llama"],
        "--data_dir",
        data_dir,
        "--max_seq_length",
        "64",
        "--max_steps",
        "5",
        "--log_steps",
        "1",
        "--precision",
        "fp32",
        "--learning_rate",
        "1e-3",
        "--model_dir",
        "",
    ]
    runs = {}
    for name, world, extra in (
        ("one", 1, ["--per_device_train_batch_size", str(2 * data_parallel)]),
        ("four", 4, ["--per_device_train_batch_size", "2", *layout_args]),
    ):
        out_dir = tempfile.mkdtemp(prefix=f"equal-{name}-", dir=WORK)
        r = run_script(script, common + extra + ["--output_dir", out_dir], world)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        runs[name] = (losses(r.stdout), setup_line(r.stdout))
    (one, single), (four, setup) = runs["one"], runs["four"]
    assert len(one) == len(four) == 5, (one, four)
    assert abs(one[0] - four[0]) <= 2e-4, f"step 1: one process {one[0]}, four ranks {four[0]}"
    assert four[-1] < four[0] - 0.05, f"the loss does not fall: {four}"
    assert setup["data_parallel"] == data_parallel, setup
    share = single["local_parameters"] / setup["local_parameters"]
    want = 4 if setup["tensor_parallel"] > 1 else setup["shard_group"]
    assert want * 0.95 <= share <= want * 1.0001, (
        f"each rank holds 1/{share:.2f} of the parameters, not 1/{want}"
    )
    return setup


@case("FSDP 2 x TP 2 with sequence parallelism on 4 ranks trains as one process does")
def fsdp_tp_equals_one_process(models, data_dir):
    setup = equals_one_process(
        models,
        data_dir,
        ["--zero_stage", "3", "--tp", "2", "--sequence_parallel", "True"],
        data_parallel=2,
    )
    assert (setup["tensor_parallel"], setup["sequence_parallel"], setup["shard_group"]) == (
        2,
        True,
        2,
    ), setup


@case("HSDP 2 x 2 (two replicas of two shards) on 4 ranks trains as one process does")
def hsdp_equals_one_process(models, data_dir):
    setup = equals_one_process(
        models, data_dir, ["--zero_stage", "3", "--shard_degree", "2"], data_parallel=4
    )
    assert (setup["replicas"], setup["shard_group"], setup["tensor_parallel"]) == (2, 2, 1), setup


@case("train.py's attention runs causal and mask-free on a fused kernel, as modelled")
def attention_as_planned():
    """Transformers 4.56 builds a b x 1 x s x s mask for unpacked training batches unless told
    they are not packed; FP32 with grouped KV heads would fall back to SDPA's math path."""
    import torch
    from transformers import Gemma2Config, Gemma2Model, LlamaConfig, LlamaModel

    train = load_script(os.path.join(WORK, "plan0", "scripts", "train_model.py"))
    train.attention_as_planned(torch)
    seen = []
    original = torch.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, **kw):
        mask = None if attn_mask is None else tuple(attn_mask.shape)
        seen.append(
            (mask, kw.get("is_causal"), kw.get("enable_gqa", False), k.shape[1] == q.shape[1])
        )
        return original(q, k, v, attn_mask=attn_mask, **kw)

    llama = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
    )
    torch.nn.functional.scaled_dot_product_attention = spy
    try:
        grouped, repeated = (None, True, True, False), (None, True, False, True)
        # BF16; FP32 (repeated heads: no fused kernel takes grouped ones); FP32 weights
        # under BF16 autocast (the keys arrive in FP32, SDPA computes in BF16: grouped).
        for dtype, autocast, want in (
            (torch.bfloat16, False, grouped),
            (torch.float32, False, repeated),
            (torch.float32, True, grouped),
        ):
            seen.clear()
            model = LlamaModel._from_config(llama, attn_implementation="sdpa", dtype=dtype)
            model.config.use_cache = False
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                model(input_ids=torch.randint(0, 100, (2, 16)))
            assert seen == [want] * 2, (dtype, autocast, seen)
        # Gemma 2's sliding layer (window 8 < 16 tokens) keeps its mask.
        seen.clear()
        gemma = Gemma2Model._from_config(
            Gemma2Config(
                hidden_size=64,
                intermediate_size=128,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                head_dim=16,
                vocab_size=100,
                sliding_window=8,
            ),
            attn_implementation="sdpa",
            dtype=torch.bfloat16,
        )
        gemma.config.use_cache = False
        gemma(input_ids=torch.randint(0, 100, (2, 16)))
        assert [m for m, *_ in seen] == [(2, 1, 16, 16), None], seen
    finally:
        torch.nn.functional.scaled_dot_product_attention = original


@case("lora_dtype: adapters on a BF16 base train in FP32 (PEFT's default) or in BF16, as planned")
def lora_dtype_as_planned(models):
    """The planner counts 16 B per adapter parameter in FP32 and 8 B in BF16 (states.rs)."""
    import argparse

    import torch
    from transformers import AutoModelForCausalLM

    train = load_script(
        os.path.join(HERE, "..", "..", "crates", "planner", "bundle", "train_model.py")
    )
    for dtype, want in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        model = AutoModelForCausalLM.from_pretrained(models["llama"], dtype=torch.bfloat16)
        args = argparse.Namespace(
            train_mode="lora", lora_r=4, lora_alpha=0, lora_targets="q,v", lora_dtype=dtype
        )
        trained = {p.dtype for p in train.add_adapters(args, model).parameters() if p.requires_grad}
        assert trained == {want}, (dtype, trained)


@case("LoRA targets adapt MLA's projections as the planner counts them (tiny DeepSeek-V3)")
def lora_targets_on_mla():
    import argparse

    import torch
    from transformers import AutoModelForCausalLM, DeepseekV3Config

    train = load_script(os.path.join(WORK, "plan0", "scripts", "train_model.py"))
    # Hidden 256; MLA q_lora_rank 64, kv_lora_rank 32, qk 32+16, v 32, 4 heads; layer 0 dense (512),
    # layer 1 with 4 routed + 1 shared experts of 64.
    config = DeepseekV3Config(
        hidden_size=256,
        intermediate_size=512,
        moe_intermediate_size=64,
        num_hidden_layers=2,
        first_k_dense_replace=1,
        num_attention_heads=4,
        num_key_value_heads=4,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_shared_experts=1,
        n_group=1,
        topk_group=1,
        q_lora_rank=64,
        kv_lora_rank=32,
        qk_nope_head_dim=32,
        qk_rope_head_dim=16,
        v_head_dim=32,
        vocab_size=100,
    )
    # r * (in + out) at r = 4, derived by hand as the planner sums it (architecture.rs,
    # lora_params_per_layer): q_a 256->64 (1,280), q_b 64->192 (1,024), kv_a 256->48 (1,216),
    # kv_b 32->256 (1,152), o 128->256 (1,536); MLPs 3 x 4 x (256 + 512) = 9,216 on the dense
    # layer and 5 x 3 x 4 x (256 + 64) = 19,200 on the MoE one.
    want = {
        "q,v": 2 * (1280 + 1024 + 1216 + 1152),
        "attention": 2 * (1280 + 1024 + 1216 + 1152 + 1536),
    }
    want["all-linear"] = want["attention"] + 9216 + 19200
    for targets, count in want.items():
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config)
        args = argparse.Namespace(
            train_mode="lora", lora_r=4, lora_alpha=0, lora_targets=targets, lora_dtype="fp32"
        )
        peft_model = train.add_adapters(args, model)
        got = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
        assert got == count, (targets, got, count)


@case("DPO: step 1's loss is ln 2, it falls on repeated pairs, two FSDP2 ranks equal one process")
def dpo_learns(models, fixtures):
    """At step 1 the policy is the reference (a frozen copy, or under LoRA the base with its
    zero-initialised adapters off), so every margin is 0 and the loss -log sigmoid(0) = ln 2
    (Rafailov et al. 2023, eq. 7). Trained on the same two pairs it must fall; FP32 two-rank
    FSDP2 logs the losses one process does."""
    two = os.path.join(fixtures, "two-pairs")
    os.makedirs(two, exist_ok=True)
    with (
        open(os.path.join(fixtures, "pairs", "train.jsonl")) as f,
        open(os.path.join(two, "train.jsonl"), "w") as g,
    ):
        g.writelines(f.readlines()[:2])
    script = os.path.join(WORK, f"plan{len(PLANS) - 2}", "scripts", "train.py")
    common = [
        "--model_id",
        models["llama"],
        "--data_dir",
        two,
        "--max_seq_length",
        "32",
        "--max_steps",
        "5",
        "--log_steps",
        "1",
        "--precision",
        "fp32",
        "--learning_rate",
        "1e-3",
        "--model_dir",
        "",
        "--stage",
        "dpo",
    ]
    runs = {}
    for name, world, extra in (
        ("one", 1, ["--per_device_train_batch_size", "2"]),
        ("fsdp2", 2, ["--per_device_train_batch_size", "1", "--zero_stage", "3"]),
        ("lora", 1, ["--per_device_train_batch_size", "2", "--train_mode", "lora"]),
    ):
        out_dir = tempfile.mkdtemp(prefix=f"dpo-{name}-", dir=WORK)
        r = run_script(script, common + extra + ["--output_dir", out_dir], world)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        runs[name] = losses(r.stdout)
        assert len(runs[name]) == 5 and abs(runs[name][0] - 0.6931) <= 1e-4, (name, runs[name])
        assert runs[name][-1] < runs[name][0] - 0.02, (
            f"{name}: the DPO loss does not fall: {runs[name]}"
        )
    assert max(abs(a - b) for a, b in zip(runs["one"], runs["fsdp2"], strict=True)) <= 2e-4, runs


@case("DPO: train.py's pairs, log-probabilities, loss and gradients equal TRL 0.24's DPOTrainer's")
def dpo_matches_trl(models, fixtures):
    """train.py runs DPO in its own loop because TRL 0.24's DPOTrainer wraps a frozen reference
    in FSDP1 under FSDP2 and fails (huggingface/trl#3581), so this pins the loop to TRL: the same
    tiny FP32 model, a reference moved away from it, the same three pairs. TRL tokenizes them
    (tokenize_row), collates and scores them (concatenated_forward, compute_ref_log_probs,
    get_batch_loss_metrics); train.py's load_pairs, with_loss and dpo_loss must give the same
    ids, per-row log-probabilities, loss and policy gradients."""
    import copy

    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    train = load_script(os.path.join(WORK, "plan0", "scripts", "train_data.py"))
    train_plan = load_script(os.path.join(WORK, "plan0", "scripts", "train_plan.py"))
    with open(os.path.join(fixtures, "pairs", "train.jsonl")) as f:
        lines = [json.loads(line) for line in f][:3]
    tok = AutoTokenizer.from_pretrained(models["llama"])
    policy = AutoModelForCausalLM.from_pretrained(models["llama"], torch_dtype=torch.float32)
    reference = copy.deepcopy(policy)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in reference.parameters():
            p.add_(0.05 * torch.randn_like(p))
    beta = 0.3
    config = DPOConfig(
        output_dir=tempfile.mkdtemp(prefix="dpo-trl-", dir=WORK),
        beta=beta,
        report_to=[],
        per_device_train_batch_size=len(lines),
        use_cpu=True,
        bf16=False,
        max_length=None,
        max_prompt_length=None,
        max_completion_length=None,
    )
    trainer = DPOTrainer(
        model=policy,
        ref_model=reference,
        args=config,
        train_dataset=Dataset.from_list(lines),
        processing_class=tok,
    )
    rows = [trainer.train_dataset[i] for i in range(len(lines))]
    longest = max(
        len(r["prompt_input_ids"]) + len(r[k])
        for r in rows
        for k in ("chosen_input_ids", "rejected_input_ids")
    )
    seq = longest - 1  # no row is cut: pair_row keeps seq + 1 ids
    pairs_dir = tempfile.mkdtemp(prefix="dpo-pairs-", dir=WORK)
    with open(os.path.join(pairs_dir, "train.jsonl"), "w") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    args = train_plan.parse_args(
        [
            "--model_id",
            models["llama"],
            "--data_dir",
            pairs_dir,
            "--stage",
            "dpo",
            "--max_seq_length",
            str(seq),
            "--precision",
            "fp32",
            "--max_steps",
            "1",
        ]
    )
    pairs = train.load_pairs(args, 0, 1)
    for r, (chosen, rejected) in zip(rows, pairs, strict=True):
        prompt = r["prompt_input_ids"]
        assert chosen == train.pair_row(prompt, r["chosen_input_ids"], seq, tok.eos_token_id), (
            r,
            chosen,
        )
        assert rejected == train.pair_row(prompt, r["rejected_input_ids"], seq, tok.eos_token_id), (
            r,
            rejected,
        )
    tokens, labels = next(train.pair_batches(pairs, len(pairs), 0, torch))

    batch = trainer.data_collator(rows)
    out = trainer.concatenated_forward(policy, batch)
    trl_policy = torch.cat([out["chosen_logps"], out["rejected_logps"]])
    trl_reference = torch.cat(trainer.compute_ref_log_probs(batch))
    trl_loss, _ = trainer.get_batch_loss_metrics(policy, batch, "train")
    trl_grads = torch.autograd.grad(trl_loss, list(policy.parameters()))

    ours = train.with_loss(args, policy, torch)
    our_policy = ours(tokens, labels)
    with torch.no_grad():
        our_reference = train.with_loss(args, reference, torch)(tokens, labels)
    our_loss = train.dpo_loss(our_policy, our_reference, beta)
    our_grads = torch.autograd.grad(our_loss, list(policy.parameters()))

    torch.testing.assert_close(our_policy, trl_policy, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(our_reference, trl_reference, rtol=1e-5, atol=1e-4)
    assert abs(trl_loss.item() - 0.6931) > 0.01, (
        f"the reference moved too little to test: {trl_loss.item()}"
    )
    torch.testing.assert_close(our_loss, trl_loss, rtol=1e-5, atol=1e-6)
    for name, (a, b) in zip(
        [n for n, _ in policy.named_parameters()],
        zip(our_grads, trl_grads, strict=True),
        strict=True,
    ):
        torch.testing.assert_close(
            a, b, rtol=1e-4, atol=1e-6, msg=lambda m, name=name: f"{name}: {m}"
        )


GRPO_CONFIG = """
import json, sys
sys.path.insert(0, sys.argv[1])
import grpo
args = grpo.parse_args(sys.argv[2:])
c = grpo.grpo_config(args, True)
if int(__import__("os").environ.get("RANK", "0")) == 0:
    # A file, not stdout: torchrun's workers share one pipe, and one run lost this line there.
    with open(sys.argv[1] + "/config.json", "w") as out:
        json.dump({k: getattr(c, k) for k in (
        "fsdp_config", "gradient_checkpointing", "num_generations", "max_prompt_length",
        "max_completion_length", "beta", "loss_type", "use_vllm", "vllm_mode",
        "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size", "vllm_server_host",
        "vllm_server_port", "vllm_enable_sleep_mode", "per_device_train_batch_size",
        "gradient_accumulation_steps", "bf16")} | {"fsdp": [str(o.value) for o in c.fsdp]}, out, default=str)
"""


def grpo_checks(i, query, launcher, models, prompts_dir):
    """A GRPO plan's bundle: grpo.py's GRPOConfig takes exactly what the planner modelled, on the
    planned world size; scaled down, it trains a tiny model with Transformers generating (vLLM
    needs a GPU, accelerate's FSDP too: the CPU run is DDP)."""
    bundle = os.path.join(WORK, f"grpo{i}")
    shutil.rmtree(bundle, ignore_errors=True)
    plan_cli("export", query, "--format", "bundle", "--launcher", launcher, "--out", bundle)
    report = json.loads(plan_cli("report", query).stdout)
    plan = plan_keys(report)
    hp = hyperparameters(os.path.join(bundle, "launch.py"))
    script = os.path.join(bundle, "scripts", "grpo.py")

    @case(f"grpo {i} one truth: {query}")
    def one_truth():
        # The adapters' targets are named as train.py names them (the planner's one list).
        train_py = load_script(
            os.path.join(HERE, "..", "..", "crates", "planner", "bundle", "train_plan.py")
        )
        assert load_script(script).LORA_TARGET_SETS == train_py.LORA_TARGET_SETS
        files = sorted(
            os.path.relpath(os.path.join(d, f), bundle) for d, _, fs in os.walk(bundle) for f in fs
        )
        assert files == ["README.md", "launch.py", "scripts/grpo.py", "scripts/requirements.txt"], (
            files
        )
        need = open(os.path.join(bundle, "scripts", "requirements.txt")).read().split()
        import importlib.metadata as md

        assert f"trl=={md.version('trl')}" in need, need
        assert any(
            r.startswith("vllm==") and r.split(";")[0].strip() in need for r in md.requires("trl")
        ), need
        world = report["layout"]["gpus"]
        # The tiny model's config stands for the Hub's (FSDP2 wraps its decoder layer class).
        argv = as_argv(dict(hp, model_id=models["llama"])) + ["--use_vllm", "True"]
        written = os.path.join(os.path.dirname(script), "config.json")
        if os.path.exists(written):
            os.remove(written)
        r = run_script_code(GRPO_CONFIG, [os.path.dirname(script), *argv], world=min(world, 2))
        assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
        with open(written) as f:
            c = json.load(f)
        os.remove(written)
        seq, completion = int(plan["seq"]), int(plan["completion"])
        want = {
            "num_generations": int(plan["generations"]),
            "max_completion_length": completion,
            "max_prompt_length": seq - completion,
            "beta": float(plan["beta"]),
            "loss_type": "dapo",
            "use_vllm": True,
            "per_device_train_batch_size": int(plan["mb"]),
            "gradient_accumulation_steps": int(plan["ga"]),
            "bf16": True,
        }
        if report["rollout"]["server_gpus"]:
            # The server's size and share are its command line's (server_launch).
            want.update(vllm_mode="server", vllm_server_host="127.0.0.1", vllm_server_port=8000)
        else:
            want.update(
                vllm_mode="colocate",
                vllm_gpu_memory_utilization=float(plan["gen_share"]),
                vllm_tensor_parallel_size=report["rollout"]["vllm_tp"],
                vllm_enable_sleep_mode=plan.get("sleep") == "1",
            )
        diff = {k: (c[k], v) for k, v in want.items() if c[k] != v}
        assert not diff, f"GRPOConfig (got, planner) differ: {diff}"
        fsdp = plan["zero"] == "3" and world > 1
        assert ("full_shard" in c["fsdp"]) == fsdp, c["fsdp"]
        full = plan["ckpt"] == "full"
        if fsdp:
            f = c["fsdp_config"]
            assert f["version"] == 2 and f["reshard_after_forward"] is True, f
            assert f["activation_checkpointing"] == full and not c["gradient_checkpointing"], c
        else:
            assert c["gradient_checkpointing"] == full, c

    @case(f"grpo {i} trains (2 processes, DDP, Transformers generating)")
    def trains():
        out_dir = tempfile.mkdtemp(prefix=f"grpo{i}-", dir=WORK)
        small = dict(
            hp,
            model_id=models["llama"],
            max_seq_length=24,
            max_completion_length=8,
            per_device_train_batch_size=4,
            gradient_accumulation_steps=1,
            num_generations=4,
            max_steps=3,
            zero_stage=0,
            learning_rate=1e-3,
            save_steps=0,
        )
        argv = as_argv(small) + [
            "--use_vllm",
            "False",
            "--data_dir",
            prompts_dir,
            "--output_dir",
            out_dir,
            "--model_dir",
            os.path.join(out_dir, "model"),
        ]
        r = run_script(script, argv, 2)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        m = json.loads(measured_line(r.stdout).split(" ", 1)[1])
        assert m["world_size"] == 2 and m["steps"] == 3 and m["loss"] is not None, m
        saved = os.listdir(os.path.join(out_dir, "model"))
        want = "adapter_model.safetensors" if plan["train"] != "full" else "model.safetensors"
        assert want in saved, saved

    @case(f"grpo {i} starts vLLM's server and torchrun on the planned GPUs")
    def server_launch():
        """grpo.py, run once on the instance as SageMaker runs it (no distribution), starts
        `trl vllm-serve` on the server's GPUs with the planned engines, share and length (TRL's
        own parser reads its arguments) and torchrun on the other GPUs with the same settings."""
        from transformers import HfArgumentParser
        from trl.scripts.vllm_serve import ScriptArguments

        rollout = report["rollout"]
        k, gpn = rollout["server_gpus"], report["layout"]["gpus"] + rollout["server_gpus"]
        argv = as_argv(hp)
        r = run_script(
            script,
            argv,
            1,
            {"GRPO_DRY_RUN": "1", "SM_NUM_GPUS": str(gpn), "SM_HOSTS": '["algo-1"]'},
        )
        assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
        got = json.loads(
            next(line for line in r.stdout.splitlines() if line.startswith("GRPO_LAUNCH "))[12:]
        )
        assert got["server"][:2] == ["trl", "vllm-serve"], got
        (served,) = HfArgumentParser(ScriptArguments).parse_args_into_dataclasses(got["server"][2:])
        want = {
            "model": hp["model_id"],
            "tensor_parallel_size": rollout["vllm_tp"],
            "data_parallel_size": rollout["engines"],
            "gpu_memory_utilization": 0.9,
            "max_model_len": int(plan["seq"]),
            "port": 8000,
        }
        diff = {f: (getattr(served, f), v) for f, v in want.items() if getattr(served, f) != v}
        assert not diff, f"vllm-serve (got, planner) differ: {diff}"
        assert got["server_gpus"] == ",".join(map(str, range(k))), got
        assert got["train_gpus"] == ",".join(map(str, range(k, gpn))), got
        train = got["train"]
        assert train[train.index("--nproc_per_node") + 1] == str(report["layout"]["gpus"]), train
        assert train[-len(argv) :] == argv and train[-len(argv) - 1] == os.path.abspath(script), (
            train
        )
        launch = open(os.path.join(bundle, "launch.py")).read()
        assert re.search(r"^    distribut(ed|ion)=None,$", launch, re.M), (
            "SageMaker must run grpo.py once per instance"
        )
        several = run_script(
            script,
            argv,
            1,
            {"GRPO_DRY_RUN": "1", "SM_NUM_GPUS": str(gpn), "SM_HOSTS": '["algo-1", "algo-2"]'},
        )
        assert several.returncode == 2 and "one instance" in several.stderr, several.stderr[-600:]

    one_truth()
    trains()
    if report["rollout"]["server_gpus"]:
        server_launch()


def run_script_code(code, argv, world):
    path = os.path.join(WORK, "grpo_config.py")
    with open(path, "w") as f:
        f.write(code)
    return run_script(path, argv, world)


@case("grpo.py refuses what the planner did not model, with one line")
def grpo_refuses():
    script = os.path.join(WORK, "grpo0", "scripts", "grpo.py")
    for extra, want in (
        (["--zero_stage", "2"], "zero=1/2"),
        (["--precision", "fp8"], "precision=fp8"),
        (["--train_mode", "qlora"], "QLoRA"),
        (["--loss", "fused"], "loss=fused"),
    ):
        r = run_script(
            script, ["--model_id", "x", "--max_seq_length", "64", "--max_steps", "1", *extra], 1
        )
        assert r.returncode == 2 and want in r.stderr and "Traceback" not in r.stderr, (
            extra,
            r.stderr[-600:],
        )


@case("the ZIP the page builds opens with Python's zipfile and holds the CLI's files")
def zip_matches():
    import zipfile

    query, launcher = PLANS[1]
    path = os.path.join(WORK, "bundle.zip")
    plan_cli("export", query, "--format", "bundle", "--launcher", launcher, "--out", path)
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None, "every CRC checks"
        names = z.namelist()
        # In the order the bundle writes them (launch/bundle.rs TRAIN_PY_FILES).
        modules = ["plan", "model", "data", "checkpoints"]
        want = ["README.md", "launch.py", "scripts/train.py"]
        want += [f"scripts/train_{m}.py" for m in modules] + ["scripts/requirements.txt"]
        assert names == want, names
        for name in names:
            on_disk = open(os.path.join(WORK, "plan1", name), encoding="utf-8").read()
            assert z.read(name).decode("utf-8") == on_disk, f"{name} differs from the folder bundle"


@case("a malformed, foreign or missing line gets a clear message")
def bad_lines():
    q = PLANS[0][0]
    cases = [
        ('TRAIN_PLANNER_MEASURED {"v": 1,', "not valid JSON"),
        ("loss 2.3 step 40", "no TRAIN_PLANNER_MEASURED line found"),
        (
            'TRAIN_PLANNER_MEASURED {"v": 2, "world_size": 8, "step_time_s": 1, "tokens_per_second_per_gpu": 9}',
            "format v2",
        ),
        (
            'TRAIN_PLANNER_MEASURED {"v": 1, "plan": "model=llama-3.1-70b", "world_size": 8, "step_time_s": 1,'
            ' "tokens_per_second_per_gpu": 9}',
            "another plan",
        ),
    ]
    for line, want in cases:
        r = plan_cli("report", q, "--measured", line, check=False)
        assert r.returncode == 2 and want in r.stderr and "panicked" not in r.stderr, (
            line,
            r.stderr,
        )


def main():
    os.makedirs(WORK, exist_ok=True)
    fixtures = os.path.join(WORK, "fixture")
    models = {}
    for family in ("llama", "mixtral"):
        models[family], data_dir = fixture.make(fixtures, family)
    pairs_dir = fixture.make_pairs(fixtures)
    for i, (query, launcher) in enumerate(PLANS):
        check_plan(i, query, launcher, models, data_dir, pairs_dir)
    resume(models, data_dir)
    fsdp_tp_equals_one_process(models, data_dir)
    hsdp_equals_one_process(models, data_dir)
    attention_as_planned()
    lora_targets_on_mla()
    lora_dtype_as_planned(models)
    dpo_learns(models, fixtures)
    dpo_matches_trl(models, fixtures)
    prompts_dir = fixture.make_prompts(fixtures)
    for i, (query, launcher) in enumerate(GRPO_PLANS):
        grpo_checks(i, query, launcher, models, prompts_dir)
    grpo_refuses()
    zip_matches()
    bad_lines()
    failed = sum(1 for _, e in RESULTS if e)
    print(f"bundle: {len(RESULTS) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
