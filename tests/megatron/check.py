#!/usr/bin/env python3
"""Checks Megatron plans' Megatron-Bridge launcher against the pinned packages.

For each plan below, `plan export '<plan>' --format bundle` writes the bundle;
then, on a CPU:

  1. `scripts/pretrain_megatron_bridge.py --check` builds Megatron-Core's own
     TransformerConfig (MLATransformerConfig for DeepSeek-V3),
     OptimizerConfig and DistributedDataParallelConfig from the bundle's
     settings with the pinned megatron-core; their constructors validate the
     parallel layout, recomputation and precision;
  2. what those objects hold equals the planner's plan (`plan report`):
     every parallel degree, the pipeline's ends, recomputation, FP8, the
     distributed optimizer, and the batch;
  3. the Megatron-Bridge groups and every keyword the launcher passes to a
     Megatron-Bridge class are fields of that class in the pinned
     megatron-bridge's source (read with `ast`: it does not import without
     TransformerEngine), and every name the launcher imports exists there;
  4. a plan the launcher does not run (op-level checkpointing) is refused by
     the launcher and noted by the planner on its export; LoRA plans (MLPerf
     Training's Llama 2 70B job on one p6-b200 with TP 1 and on one p5 with
     TP 4 x CP 2) carry Megatron-Bridge's LoRA or CanonicalLoRA with the
     planned rank, alpha and target modules, which the pinned package's
     classes take (fields and default targets read from its source);
  5. every Megatron plan the auto-plan offers for five queries (dense, MoE,
     long sequences, FP8) passes 1: no offer exports a layout Megatron refuses.

Prints one closing line: "megatron: N passed, M failed".
"""

import ast
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import traceback

PLAN = os.environ.get("PLAN_BIN", "target/debug/plan")
LAUNCHER = "pretrain_megatron_bridge.py"
SETTINGS = "megatron_bridge_plan.json"
TIMEOUT = 300

# (what it is, plan): the 405B recipe layout of NVIDIA's H100 table (TP 8,
# PP 8 x VP 8 with the embedding and loss as pipeline slots, CP 2, FP8),
# DeepSeek-V3 as its B200 recipe (EP 8, PP 16 with 4 and 1 layers at the
# ends, MLA, MTP, DeepEP, bf16 moments), Qwen3-30B-A3B with VP 24 and EP 8,
# a custom 40-layer shape with Megatron-FSDP and CP, Qwen3-235B-A22B as its
# H100 recipe (EP 32 over TP 2 x DP 16, so the experts' TP is 1), and NVFP4
# with block recomputation of half the layers.
PLANS = [
    (
        "Llama 3.1 405B recipe layout",
        "model=custom&layers=126&hidden=16384&heads=128&kv_heads=8&head_dim=128&ffn=53248&vocab=128256&mlp=swiglu"
        "&seq=8192&mb=1&ga=64&precision=fp8&ckpt=none&grad_bf16=1&fp8_params=1&loss=fused&stack=megatron&zero=1"
        "&tp=8&pp=8&vp=8&cp=2&sp=1&instance=ml.p5.48xlarge&nodes=128&tp_overlap=1",
    ),
    (
        "DeepSeek-V3 EP plan",
        "model=deepseek-v3&seq=4096&mb=1&ga=256&precision=fp8&ckpt=selective&grad_bf16=1&fp8_params=1"
        "&bf16_moments=1&recompute_modules=mla_up_proj&mtp=1&loss=fused&stack=megatron&zero=1&tp=1&pp=16&ep=8"
        "&pp_first=4&pp_last=1&instance=ml.p6-b200.48xlarge&nodes=32&moe_flex=1",
    ),
    (
        "Qwen3-30B-A3B, VP 24, EP 8",
        "model=qwen3-30b-a3b&seq=4096&mb=2&ga=32&precision=fp8&ckpt=none&grad_bf16=1&fp8_params=1&loss=fused"
        "&stack=megatron&zero=1&pp=2&vp=24&ep=8&instance=ml.p5.48xlarge&nodes=2&ep_overlap=1",
    ),
    (
        "custom shape, Megatron-FSDP, CP 2",
        "model=custom&layers=40&hidden=5120&heads=40&kv_heads=8&head_dim=128&ffn=13824&vocab=151936&mlp=swiglu"
        "&seq=16384&stack=megatron&tp=2&pp=4&cp=2&sp=1&ckpt=full&zero=3&precision=bf16&instance=ml.p5.48xlarge&nodes=4",
    ),
    (
        "Qwen3-235B-A22B recipe layout, EP 32 over TP 2 x DP 16 (ETP 1)",
        "model=qwen3-235b-a22b&seq=4096&mb=1&ga=128&precision=fp8&grad_bf16=1&fp8_params=1&loss=fused"
        "&stack=megatron&zero=1&tp=2&pp=8&vp=4&ep=32&sp=1&instance=ml.p5.48xlarge&nodes=32&ep_overlap=1",
    ),
    (
        "Llama 3.1 8B NVFP4, half the layers recomputed",
        "model=llama-3.1-8b&stack=megatron&precision=nvfp4&instance=ml.p6-b200.48xlarge&ckpt=0.5&pp=2&zero=1",
    ),
    (
        "DeepSeek-V3 recipe layout, PP 8 x VP 4 with 7 and 6 layers at the ends (a layout string)",
        "model=deepseek-v3&seq=4096&mb=1&ga=128&precision=fp8&ckpt=selective&recompute_modules=mla_up_proj,mlp"
        "&fp8_params=1&bf16_moments=1&mtp=1&loss=fused&stack=megatron&zero=1&tp=2&pp=8&vp=4&ep=64"
        "&pp_first=7&pp_last=6&instance=ml.p5.48xlarge&nodes=128&moe_flex=1",
    ),
    (
        "Llama 3.1 8B, PP 4 x VP 2 with 6 and 8 layers at the ends, 9 on the middle ranks (a layout string)",
        "model=llama-3.1-8b&stack=megatron&pp=4&vp=2&pp_first=6&pp_last=8&instance=ml.p5.48xlarge&zero=1",
    ),
    (
        "Llama 2 70B LoRA (MLPerf Training's job) on one p6-b200, TP 1, FP8 weights",
        "model=llama-2-70b&stack=megatron&train=lora&lora_rank=16&lora_alpha=32&seq=8192&mb=1&ga=1&precision=fp8"
        "&fp8_params=1&zero=1&ckpt=full&loss=fused&instance=ml.p6-b200.48xlarge&tp=1",
    ),
    (
        "Llama 2 70B LoRA (MLPerf Training's job) on one p5, TP 4 x CP 2, FP8 weights",
        "model=llama-2-70b&stack=megatron&train=lora&lora_rank=16&lora_alpha=32&seq=8192&mb=1&ga=8&precision=fp8"
        "&fp8_params=1&zero=1&ckpt=none&loss=fused&instance=ml.p5.48xlarge&tp=4&cp=2&sp=1",
    ),
    (
        "Llama 3.1 70B, activations of 48 layers offloaded",
        "model=llama-3.1-70b&stack=megatron&precision=fp8&instance=ml.p6e-gb200.36xlarge&nodes=16&ultraserver=72"
        "&zero=3&seq=8192&mb=2&ga=2&fp8_params=1&grad_bf16=1&loss=fused&offload=1&offload_layers=48",
    ),
]
RESULTS = []


def case(name):
    def wrap(fn):
        def run(*a):
            try:
                fn(*a)
                RESULTS.append((name, None))
                print(f"ok   {name}")
            except Exception:  # noqa: BLE001 - every failure is reported
                RESULTS.append((name, traceback.format_exc()))
                print(f"FAIL {name}\n{traceback.format_exc()}", file=sys.stderr)
                print(f"FAIL {name}")

        return run

    return wrap


def export(plan, out):
    subprocess.run(
        [PLAN, "export", plan, "--format", "bundle", "--out", out],
        check=True,
        capture_output=True,
        timeout=TIMEOUT,
    )
    return os.path.join(out, "scripts")


def report(plan):
    return json.loads(
        subprocess.run(
            [PLAN, "report", plan], check=True, capture_output=True, text=True, timeout=TIMEOUT
        ).stdout
    )


def run_check(scripts):
    p = subprocess.run(
        [sys.executable, os.path.join(scripts, LAUNCHER), "--check"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return p.returncode, p.stdout, p.stderr


def planned_recompute(r, settings):
    """What Megatron recomputes, from the plan's own link: block recomputation
    counts the layers of a model chunk (transformer_block.py, len(self.layers))."""
    keys = dict(kv.split("=", 1) for kv in r["query"].split("&"))
    ckpt = keys["ckpt"]
    vp = int(keys.get("vp", "1")) if r["layout"]["pp"] > 1 else 1
    per_stage = -(-r["architecture"]["layers"] // (r["layout"]["pp"] * vp))
    if ckpt == "full":
        return ("full", "uniform", 1)
    if ckpt in ("none", "op"):
        return (None, None, None)
    if ckpt == "selective":
        return ("selective", None, None)
    return ("full", "block", max(1, min(per_stage, round(float(ckpt) * per_stage))))


def layout_matches(name, plan):
    with tempfile.TemporaryDirectory() as tmp:
        scripts = export(plan, tmp)
        rc, out, err = run_check(scripts)
        assert rc == 0, f"{name}: --check refused the plan:\n{err[-3000:]}"
        built = json.loads(out.strip().splitlines()[-1])
        with open(os.path.join(scripts, SETTINGS), encoding="utf-8") as f:
            settings = json.load(f)
    r = report(plan)
    assert not r["errors"], r["errors"]
    model = built.get("MLATransformerConfig") or built["TransformerConfig"]
    lay = r["layout"]
    for key, want in [
        ("tensor_model_parallel_size", lay["tp"]),
        ("pipeline_model_parallel_size", lay["pp"]),
        ("context_parallel_size", lay["cp"]),
        ("expert_model_parallel_size", lay["ep"]),
        ("num_layers", r["architecture"]["layers"]),
    ]:
        assert model[key] == want, f"{name}: {key} {model[key]} != planned {want}"
    # The experts' TP: the dense TP where EP divides DP x CP, else 1 (EP takes TP's ranks).
    # Unset, Megatron-Core takes the dense TP (ModelParallelConfig.__post_init__).
    etp = lay["tp"] if (lay["dp"] * lay["cp"]) % lay["ep"] == 0 else 1
    got = model.get("expert_tensor_parallel_size") or lay["tp"]
    assert got == etp, f"{name}: ETP {got} != {etp}"
    stages = lay["stages"]
    if lay["pp"] > 1 and stages["embedding_and_loss_slots"]:
        assert (
            model["account_for_embedding_in_pipeline_split"]
            and model["account_for_loss_in_pipeline_split"]
        )
    elif lay["pp"] > 1 and "pipeline_model_parallel_layout" in settings["model"]:
        # Megatron-Core's own reading of the layout string: decoder layers per rank.
        from megatron.core.transformer.enums import LayerType
        from megatron.core.transformer.pipeline_parallel_layer_layout import (
            PipelineParallelLayerLayout,
        )

        parsed = PipelineParallelLayerLayout(
            settings["model"]["pipeline_model_parallel_layout"], lay["pp"]
        )
        per_rank = [sum(chunk.count(LayerType.decoder) for chunk in rank) for rank in parsed.layout]
        want = [stages["first"]] + [stages["middle"]] * (lay["pp"] - 2) + [stages["last"]]
        assert per_rank == want, f"{name}: layout {per_rank} != {want}"
    elif lay["pp"] > 1 and (
        stages["first"] != stages["middle"] or stages["last"] != stages["middle"]
    ):
        assert (
            model["num_layers_in_first_pipeline_stage"],
            model["num_layers_in_last_pipeline_stage"],
        ) == (stages["first"], stages["last"]), name
    got = (model["recompute_granularity"], model["recompute_method"], model["recompute_num_layers"])
    assert got == planned_recompute(r, settings), f"{name}: recompute {got}"
    precision = dict(kv.split("=", 1) for kv in r["query"].split("&"))["precision"]
    fp8 = settings["mixed_precision"]["fp8"], settings["mixed_precision"].get("fp8_recipe")
    assert fp8 == {"fp8": ("hybrid", "tensorwise"), "mxfp8": ("hybrid", "mxfp8")}.get(
        precision, (None, None)
    ), fp8
    assert (settings["mixed_precision"]["fp4"] == "e2m1") == (precision == "nvfp4")
    opt = built["OptimizerConfig"]
    zero = int(dict(kv.split("=", 1) for kv in r["query"].split("&"))["zero"])
    assert opt["use_distributed_optimizer"] == (zero >= 1)
    assert built["DistributedDataParallelConfig"]["use_megatron_fsdp"] == (zero >= 2)
    train = settings["train"]
    assert train["global_batch_size"] == r["global_batch_sequences"], (
        train,
        r["global_batch_sequences"],
    )
    assert train["train_iters"] == r["time"]["steps"]


# --- Megatron-Bridge's source, read with ast -------------------------------


def bridge_root():
    import importlib.util

    spec = importlib.util.find_spec("megatron.bridge")
    assert spec and spec.submodule_search_locations, "megatron-bridge is not installed"
    return list(spec.submodule_search_locations)[0]


def module_file(module):
    root = bridge_root()
    rel = module.split(".")[2:]
    path = os.path.join(root, *rel)
    return path + ".py" if os.path.exists(path + ".py") else os.path.join(path, "__init__.py")


def classes_in(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    imports = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                imports[a.asname or a.name] = (node.module, a.name)
    return {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}, imports


def fields_of(module, name):
    """A dataclass's fields, as the launcher's `strict` reads them: its own
    annotated names and its bases' (in megatron-bridge by ast, in
    megatron-core by importing them); not a hand-written `__init__`'s
    arguments (GPTDatasetConfig's `seq_length`), which `strict` refuses."""
    if module.startswith("megatron.core"):
        import importlib

        return {f.name for f in dataclasses.fields(getattr(importlib.import_module(module), name))}
    defs, imports = classes_in(module_file(module))
    node = defs[name]
    names = {
        s.target.id
        for s in node.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }
    for base in node.bases:
        b = base.value if isinstance(base, ast.Subscript) else base
        if not isinstance(b, ast.Name) or b.id in ("ABC", "Generic", "Container"):
            continue
        if b.id in defs:
            names |= fields_of(module, b.id)
        elif b.id in imports and imports[b.id][0].startswith("megatron"):
            names |= fields_of(*imports[b.id])
    return names


BRIDGE = {
    "GPTModelProvider": "megatron.bridge.models.gpt_provider",
    "MLAModelProvider": "megatron.bridge.models.mla_provider",
    "MixedPrecisionConfig": "megatron.bridge.training.mixed_precision",
    "CommOverlapConfig": "megatron.bridge.training.comm_overlap",
    "TokenizerConfig": "megatron.bridge.training.tokenizers.config",
}
BRIDGE["LoRA"] = "megatron.bridge.peft.lora"
BRIDGE["CanonicalLoRA"] = "megatron.bridge.peft.canonical_lora"
for _n in (
    "ConfigContainer",
    "TrainingConfig",
    "OptimizerConfig",
    "DistributedDataParallelConfig",
    "SchedulerConfig",
    "GPTDatasetConfig",
    "LoggerConfig",
    "CheckpointConfig",
    "RNGConfig",
):
    BRIDGE[_n] = "megatron.bridge.training.config"


def launcher_source():
    here = os.path.dirname(os.path.abspath(__file__))
    return open(
        os.path.join(here, "..", "..", "crates", "planner", "bundle", LAUNCHER), encoding="utf-8"
    ).read()


@case("the launcher's imports exist in the pinned megatron-bridge")
def imports_exist():
    tree = ast.parse(launcher_source())
    seen = 0
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("megatron.bridge")
        ):
            defs, imports = classes_in(module_file(node.module))
            for a in node.names:
                assert a.name in defs or a.name in imports, f"{node.module} has no {a.name}"
                seen += 1
    assert seen >= 10, seen


@case("every keyword the launcher passes to a Megatron-Bridge class is one of its fields")
def keywords_are_fields():
    tree = ast.parse(launcher_source())
    checked = 0
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in BRIDGE
        ):
            fields = fields_of(BRIDGE[node.func.id], node.func.id)
            for kw in node.keywords:
                if kw.arg is not None:
                    assert kw.arg in fields, f"{node.func.id} has no field {kw.arg}"
                    checked += 1
    assert checked >= 25, checked


@case("the settings' Megatron-Bridge groups are fields of their classes")
def groups_are_fields():
    groups = {
        "provider": ("GPTModelProvider", "MLAModelProvider"),
        "mixed_precision": ("MixedPrecisionConfig",),
        "train": ("TrainingConfig",),
        "dataset": ("GPTDatasetConfig",),
        "comm_overlap": ("CommOverlapConfig",),
    }
    for _, plan in PLANS:
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(export(plan, tmp), SETTINGS), encoding="utf-8") as f:
                settings = json.load(f)
        for group, classes in groups.items():
            for cls in classes:
                fields = fields_of(BRIDGE[cls], cls)
                missing = set(settings[group] or {}) - fields
                assert not missing, f"{cls} has no {sorted(missing)}"


@case("a plan the launcher does not run is refused, and the planner says so on the export")
def refuses_op_checkpointing():
    plan = "model=llama-3.1-8b&stack=megatron&ckpt=op&instance=ml.p5.48xlarge&tp=2"
    r = report(plan)
    assert not r["errors"], r["errors"]
    assert any(e["code"] == "megatron_launcher_refuses" for e in r["export_notes"]), r[
        "export_notes"
    ]
    with tempfile.TemporaryDirectory() as tmp:
        rc, _, err = run_check(export(plan, tmp))
    assert rc != 0 and "ckpt=op" in err, err[-500:]


def default_targets(module, name):
    """A PEFT class's default `target_modules` in the pinned source (its default_factory's list)."""
    defs, _ = classes_in(module_file(module))
    for stmt in defs[name].body:
        if isinstance(stmt, ast.AnnAssign) and getattr(stmt.target, "id", "") == "target_modules":
            for node in ast.walk(stmt.value):
                if isinstance(node, ast.List):
                    return [ast.literal_eval(e) for e in node.elts]
    raise AssertionError(f"{name} has no default target_modules")


@case(
    "LoRA plans carry Megatron-Bridge's LoRA or CanonicalLoRA as planned, with the pinned classes' targets"
)
def lora_exports():
    cases = [
        # (link, class, target modules): all-linear takes the fused modules whole.
        (
            "model=llama-2-70b&stack=megatron&train=lora&lora_rank=16&lora_alpha=32&instance=ml.p6-b200.48xlarge",
            "LoRA",
            ["linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"],
        ),
        # q and v alone split the fused linear_qkv: CanonicalLoRA adapts them one by one, as PEFT does.
        (
            "model=llama-3.1-8b&stack=megatron&train=lora&lora_targets=q_proj,v_proj&instance=ml.p5.48xlarge",
            "CanonicalLoRA",
            ["linear_q", "linear_v"],
        ),
        (
            "model=llama-3.1-8b&stack=megatron&train=lora&lora_targets=attention&lora_rank=8&instance=ml.p5.48xlarge",
            "LoRA",
            ["linear_qkv", "linear_proj"],
        ),
    ]
    for plan, cls, targets in cases:
        r = report(plan)
        assert not r["errors"] and not r["export_notes"], (plan, r["errors"], r["export_notes"])
        settings = settings_of(plan)
        peft = settings["peft"]
        assert peft["class"] == cls and peft["target_modules"] == targets, (plan, peft)
        keys = dict(kv.split("=", 1) for kv in r["query"].split("&"))
        assert peft["dim"] == int(keys["lora_rank"]) and peft["alpha"] == int(
            keys.get("lora_alpha", 2 * int(keys["lora_rank"]))
        )
        assert peft["dropout"] == 0.0 and settings["hf_model"], peft
        module = BRIDGE[cls]
        assert {"target_modules", "dim", "alpha", "dropout"} <= fields_of(module, cls), cls
        assert set(targets) <= set(default_targets(module, cls)), (cls, targets)
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = run_check(export(plan, tmp))
        assert rc == 0, err[-2000:]
        assert json.loads(out.strip().splitlines()[-1])["peft"] == peft
    # The launcher fine-tunes with them, from a checkpoint it converts or is given.
    source = launcher_source()
    for needle in (
        "finetune if config.peft else pretrain",
        "pretrained_checkpoint=pretrained",
        'AutoBridge.import_ckpt(plan["hf_model"], path)',
    ):
        assert needle in source, needle


# The auto-plan's queries whose offers must all run: dense, MoE, long
# sequences, FP8 (the page's and the CLI's `plan search`).
SEARCHES = [
    "model=llama-3.1-70b&impl=megatron",
    "model=qwen3-30b-a3b&stack=megatron",
    "model=llama-3.1-405b&stack=megatron&precision=fp8",
    "model=deepseek-v3&stack=megatron",
    "model=llama-3.1-8b&stack=megatron&seq=32768",
]


def launcher_module(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("pretrain_megatron_bridge", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@case(
    "GPT-OSS's sliding window and sinks reach Megatron-Core as Megatron-Bridge's own bridge sets them"
)
def attention_window():
    """gpt_oss_bridge.py (megatron-bridge 0.3.1): window_size (128, 0), window_attn_skip_freq 2
    (one full-attention layer after each windowed one), softmax_type "learnable" (the sinks).
    A Gemma plan, whose norms after attention and MLP the generic provider lacks, is refused."""
    plan = "model=gpt-oss-120b&stack=megatron&ep=8&precision=bf16&instance=ml.p5.48xlarge&nodes=2"
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run_check(export(plan, tmp))
        assert rc == 0, err[-3000:]
        built = json.loads(out.strip().splitlines()[-1])["TransformerConfig"]
        got = (list(built["window_size"]), built["window_attn_skip_freq"], built["softmax_type"])
        assert got == ([128, 0], 2, "learnable"), got
    with tempfile.TemporaryDirectory() as tmp:
        rc, _, err = run_check(export("model=gemma-3-27b&stack=megatron", tmp))
        assert rc != 0 and "Gemma" in err, (rc, err[-800:])


@case("RoPE is the config.json's: base, Llama 3.1 bands, YaRN on MLA and on a GPT model")
def rotary_embeddings():
    """Megatron-Core's defaults (base 10,000, no scaling; MLA's mscale_all_dim 0.0) would build
    another model. Values: each model's config.json (crates/planner/data/models.json names the copy)."""
    import importlib.util
    import re

    llama = settings_of("model=llama-3.1-8b&stack=megatron&instance=ml.p5.48xlarge")
    got = {
        k: llama["provider"][k]
        for k in ("position_embedding_type", "rotary_base", "rope_scaling", "rope_scaling_factor")
    }
    assert got == {
        "position_embedding_type": "rope",
        "rotary_base": 500000,
        "rope_scaling": True,
        "rope_scaling_factor": 8.0,
    }, got
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run_check(export(PLANS[1][1], tmp))
        assert rc == 0, err[-3000:]
        mla = json.loads(out.strip().splitlines()[-1])["MLATransformerConfig"]
    got = {
        k: mla[k]
        for k in (
            "rope_type",
            "rotary_base",
            "rotary_scaling_factor",
            "original_max_position_embeddings",
            "beta_fast",
            "beta_slow",
            "mscale",
            "mscale_all_dim",
        )
    }
    assert got == {
        "rope_type": "yarn",
        "rotary_base": 10000.0,
        "rotary_scaling_factor": 40.0,
        "original_max_position_embeddings": 4096,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
    }, got
    # gpt-oss: YaRN on a GPT model, set by name on the provider; the names are those GPTModel reads.
    oss = settings_of("model=gpt-oss-120b&stack=megatron&ep=8&instance=ml.p5.48xlarge&nodes=2")
    gpt_model = os.path.join(
        os.path.dirname(importlib.util.find_spec("megatron.core").origin),
        "models",
        "gpt",
        "gpt_model.py",
    )
    read = set(
        re.findall(
            r'getattr\(\s*self\.config,\s*"(yarn_[a-z_]+)"',
            open(gpt_model, encoding="utf-8").read(),
        )
    )
    assert read and set(oss["yarn"]) == read, (sorted(oss["yarn"]), sorted(read))
    assert (
        oss["provider"]["position_embedding_type"] == "yarn"
        and oss["provider"]["rotary_base"] == 150000
    )
    want = {
        "yarn_rotary_scaling_factor": 32.0,
        "yarn_original_max_position_embeddings": 4096,
        "yarn_beta_fast": 32.0,
        "yarn_beta_slow": 1.0,
        "yarn_mscale": None,
        "yarn_mscale_all_dim": None,
        "yarn_correction_range_round_to_int": False,
    }
    assert oss["yarn"] == want, oss["yarn"]
    assert 'for key, value in (plan.get("yarn") or {}).items():' in launcher_source()


def settings_of(plan):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(export(plan, tmp), SETTINGS), encoding="utf-8") as f:
            return json.load(f)


@case("every Megatron plan the auto-plan offers is accepted by Megatron-Core")
def offers_run():
    import contextlib
    import io

    offered = []
    for q in SEARCHES:
        r = json.loads(
            subprocess.run(
                [PLAN, "search", q], check=True, capture_output=True, text=True, timeout=TIMEOUT
            ).stdout
        )
        picks = r["pareto"] + [r[k] for k in ("fastest", "cheapest") if r.get(k)]
        offered += [p["query"] for p in picks]
    offered = list(dict.fromkeys(offered))
    assert len(offered) >= 20, len(offered)
    refused = []
    with tempfile.TemporaryDirectory() as tmp:
        module = None
        for i, q in enumerate(offered):
            scripts = export(q, os.path.join(tmp, str(i)))
            module = module or launcher_module(os.path.join(scripts, LAUNCHER))
            plan = module.load_plan(os.path.join(scripts, SETTINGS))
            assert not plan["unsupported"], (q, plan["unsupported"])
            try:
                with (
                    contextlib.redirect_stdout(io.StringIO()),
                    contextlib.redirect_stderr(io.StringIO()),
                ):
                    module.check(plan)
            except (Exception, SystemExit) as e:  # noqa: BLE001 - a refusal is the finding
                refused.append(f"{q}: {e}")
    assert not refused, "\n".join(refused)
    print(f"     {len(offered)} offered plans, all accepted")


def main():
    for name, plan in PLANS:
        case(f"{name}: Megatron-Core accepts it, and it is the plan")(layout_matches)(name, plan)
    imports_exist()
    keywords_are_fields()
    groups_are_fields()
    refuses_op_checkpointing()
    lora_exports()
    attention_window()
    rotary_embeddings()
    offers_run()
    failed = sum(1 for _, e in RESULTS if e)
    print(f"megatron: {len(RESULTS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
