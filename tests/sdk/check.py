#!/usr/bin/env python3
"""Checks the planner's SageMaker launch code against the real SDKs.

  check.py syntax   every format for every plan (and hostile strings): ast.parse + py_compile
  check.py v2       run the PyTorch and HuggingFace snippets with sagemaker 2.x
  check.py v3       run the ModelTrainer snippets with sagemaker 3.x
  check.py hyperpod validate and render the HyperPod config.yaml with sagemaker-hyperpod

Snippets run with a stub session and no AWS credentials, up to the
construction of the estimator or trainer (their `fit`/`train` sits under
`if __name__ == "__main__"`). The resolved training image must exist for the
instance type (the SDK's image_uris raises otherwise), and the instance type,
count, distribution and batch settings must equal the plan's.

Prints one closing line: "<mode>: N passed, M failed".
"""

import ast
import os
import py_compile
import runpy
import subprocess
import sys
import tempfile
import traceback
from urllib.parse import parse_qs

PLAN = os.environ.get("PLAN_BIN", "target/debug/plan")
FORMATS = ["pytorch", "huggingface", "modeltrainer", "training-args"]
BLACKWELL = ("ml.p6-b200", "ml.p6-b300", "ml.g7e", "ml.p6e-gb200")
SMP_FAMILIES = ("ml.p4d.", "ml.p4de.", "ml.p5.", "ml.p5e.", "ml.p5en.")
GPUS_PER_NODE = {
    "ml.g5.2xlarge": 1,
    "ml.g5.12xlarge": 4,
    "ml.g6e.12xlarge": 4,
    "ml.g7e.24xlarge": 4,
}


def plans():
    """64 plans over instance families, precisions, sharding, node counts and export fields."""
    instances = [
        ("ml.p6-b200.48xlarge", ["bf16", "fp8", "mxfp8", "nvfp4"]),
        ("ml.p6-b300.48xlarge", ["bf16", "fp8"]),
        ("ml.p5.48xlarge", ["bf16", "fp8"]),
        ("ml.p5e.48xlarge", ["bf16", "fp8"]),
        ("ml.p5en.48xlarge", ["bf16", "fp8"]),
        ("ml.p4d.24xlarge", ["bf16", "bf16-pure"]),
        ("ml.p4de.24xlarge", ["bf16", "fp32"]),
        ("ml.g7e.48xlarge", ["bf16", "fp8"]),
        ("ml.g7e.24xlarge", ["bf16"]),
        ("ml.g6e.48xlarge", ["bf16", "fp8"]),
        ("ml.g6e.12xlarge", ["bf16"]),
        ("ml.g5.48xlarge", ["bf16"]),
        ("ml.g5.12xlarge", ["bf16"]),
        ("ml.g5.2xlarge", ["bf16"]),
        ("ml.g6.48xlarge", ["bf16"]),
    ]
    models = [
        "llama-3.2-1b",
        "llama-3.1-8b",
        "qwen2.5-7b",
        "mixtral-8x7b",
        "llama-3.1-70b",
        "gemma-2-9b",
    ]
    sharding = [
        "zero=0",
        "zero=1",
        "zero=2",
        "zero=3",
        "zero=3&shard=8",
        "zero=3&offload=1",
        "zero=3&tp=2",
        "zero=3&shard=8&offload=1&tp=2",
    ]
    extras = [
        "",
        "spot=1",
        "role=arn:aws:iam::123456789012:role/service-role/SM-Exec&s3=s3://my-bucket/runs/2026",
        "job=llama-ft-01&entry=src/train_fsdp.py&hf_model=meta-llama/Llama-3.1-8B",
        "ckpt=full&loss=fused",
        "train=lora&lora_rank=32&save=adapter",
        "train=qlora&optimizer=adamw8bit",
        "async_save=1&save_every=200&spot=1",
        "stage=dpo&ckpt=full",
        "stage=dpo&train=lora&lora_targets=q,v",
        "stage=grpo&ckpt=full&seq=2048&completion=1024&mb=8&ga=1",
        "stage=grpo&train=lora&beta=0.04&generations=4&gen_share=0.4&mb=4&ga=2",
        # hostile strings: rejected at the URL, so the code keeps safe defaults
        "role=x%22)%0Aimport%20os%23&job=a'b&s3=s3://b/%22%22%22&hf_model=%3Cscript%3E&entry=..%2Fx.py",
    ]
    out = []
    i = 0
    for inst, precs in instances:
        for prec in precs:
            gpn = GPUS_PER_NODE.get(inst, 8)
            nodes = [1, 2, 4][i % 3] if not inst.startswith("ml.g5.2") else 1
            shard = sharding[i % len(sharding)]
            if "shard=8" in shard and gpn < 8:
                shard = shard.replace("shard=8", f"shard={gpn}")
            if "tp=2" in shard and gpn < 2:
                shard = shard.replace("&tp=2", "")
            q = f"model={models[i % len(models)]}&instance={inst}&precision={prec}&nodes={nodes}&{shard}&{extras[i % len(extras)]}"
            out.append(q.strip("&"))
            i += 1
    # Fill to 64 with variations of sequence, batch and price.
    while len(out) < 64:
        base = out[len(out) % 25]
        out.append(f"{base}&seq={[4096, 32768, 131072][len(out) % 3]}&mb=2&ga=4&price=50")
    return out


# Megatron plans start the bundle's Megatron-Bridge launcher in the NeMo
# Framework container the user pushed to ECR (NEMO_IMAGE_URI).
# GRPO with vLLM as a server beside training on one instance: grpo.py starts the server and
# torchrun itself, so SageMaker runs it once per instance (no distribution).
GRPO_SERVER = [
    "model=qwen2.5-7b&stage=grpo&seq=1280&completion=1024&mb=4&ga=4&zero=3&ckpt=full"
    "&instance=ml.p5.48xlarge&gen_gpus=4",
    "model=llama-3.2-1b&stage=grpo&train=lora&mb=8&ga=1&zero=0&instance=ml.g6e.12xlarge&gen_gpus=2",
]

MEGATRON = [
    "model=llama-3.1-70b&stack=megatron&precision=fp8&instance=ml.p5.48xlarge&nodes=8&tp=4&pp=4&cp=2&zero=1",
    "model=deepseek-v3&stack=megatron&precision=fp8&instance=ml.p6-b200.48xlarge&nodes=32&pp=16&ep=8"
    "&pp_first=4&pp_last=1&ckpt=selective&recompute_modules=mla_up_proj&spot=1",
]
NEMO_IMAGE = "111111111111.dkr.ecr.us-east-1.amazonaws.com/nemo:test"

# Capacity bought as a training plan (#58): the GB200 UltraServer plan of the
# issue (32 instances on two u-p6e-gb200x72: 18 + 14, as its NVLink domains
# were planned), the same without an ARN (None, to be filled in), and a
# P6-B200 plan on a plan's capacity (no placement: not an UltraServer).
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/gb200-405b"
CAPACITY = [
    (
        "model=llama-3.1-405b&stack=megatron&instance=ml.p6e-gb200.36xlarge&nodes=32"
        "&ultraserver=72&training_plan=" + ARN,
        ARN,
        [18, 14],
    ),
    (
        "model=llama-3.1-405b&stack=megatron&instance=ml.p6e-gb200.36xlarge&nodes=32&ultraserver=36",
        None,
        [9, 9, 9, 5],
    ),
    ("model=llama-3.1-8b&instance=ml.p6-b200.48xlarge&nodes=4&training_plan=" + ARN, ARN, None),
]


def accepted_resource_config(config):
    """CreateTrainingJob's ResourceConfig as botocore's pinned service model validates it."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("sagemaker")
    report = ParamValidator().validate(config, model.shape_for("ResourceConfig"))
    assert not report.has_errors(), report.generate_report()


def planned_steps(q):
    r = subprocess.run([PLAN, "report", q], capture_output=True, text=True, check=True)
    import json

    return json.loads(r.stdout)["time"]["steps"]


def export(q, fmt):
    r = subprocess.run([PLAN, "export", q, "--format", fmt], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"plan export failed: {r.stderr}")
    return r.stdout


def query_of(q):
    """The plan as the planner normalised it (from the snippet's header line)."""
    return {k: v[-1] for k, v in parse_qs(q, keep_blank_values=True).items()}


class Results:
    def __init__(self, mode):
        self.mode, self.passed, self.failed = mode, 0, 0

    def check(self, name, fn):
        try:
            fn()
            self.passed += 1
        except Exception as e:  # report and go on
            self.failed += 1
            print(f"FAIL {self.mode} {name}: {e}")
            if os.environ.get("VERBOSE"):
                traceback.print_exc()

    def close(self):
        print(f"{self.mode}: {self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 and self.passed > 0 else 1


def syntax_mode():
    res = Results("sdk-syntax")
    tmp = tempfile.mkdtemp()
    for i, q in enumerate(plans() + MEGATRON):
        for fmt in FORMATS:

            def one(q=q, fmt=fmt, i=i):
                code = export(q, fmt)
                ast.parse(code)
                path = os.path.join(tmp, f"p{i}_{fmt.replace('-', '_')}.py")
                with open(path, "w") as f:
                    f.write(code)
                py_compile.compile(path, doraise=True)

            res.check(f"{fmt} {q}", one)
    # The string escaper: whatever goes in comes back out of the literal, and nothing else runs.
    hostile = [
        'a"b',
        "a'b",
        'x"""y',
        "back\\slash",
        "new\nline",
        "tab\tcr\r",
        "\x01\x1b\x7f (argv cannot carry NUL)",
        "ünïcødé 日本 🦙",
        '"); import os; os.system("echo pwned"); ("',
        "\\\"\n'''",
        "\u2028\u2029",
        "{x}",
        "%s",
    ]
    for s in hostile:

        def lit(s=s):
            r = subprocess.run([PLAN, "py-literal", s], capture_output=True, text=True, check=True)
            out = r.stdout.rstrip("\n")
            node = ast.parse(out, mode="eval")
            assert isinstance(node.body, ast.Constant), "a single literal"
            assert ast.literal_eval(out) == s, f"{out!r} reads back as {s!r}"

        res.check(f"py-literal {s!r}", lit)
    return res.close()


def expected_smp(q):
    p = query_of(q)
    inst = p.get("instance", "")
    # SMP v2 for hybrid sharding and activation offloading; train.py runs TP itself (#37).
    wanted = "shard" in p or p.get("offload") == "1"
    # GRPO plans start grpo.py, which shards through accelerate (never SMP).
    return wanted and inst.startswith(SMP_FAMILIES) and p.get("stage") != "grpo"


def run_snippet(code, workdir):
    path = os.path.join(workdir, "launch.py")
    with open(path, "w") as f:
        f.write(code)
    os.makedirs(os.path.join(workdir, "scripts", "src"), exist_ok=True)
    for script in ("train.py", "grpo.py", "src/train_fsdp.py", "pretrain_megatron_bridge.py"):
        with open(os.path.join(workdir, "scripts", script), "w") as f:
            f.write("print('train')\n")
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        return runpy.run_path(path, run_name="launch_test")
    finally:
        os.chdir(cwd)


def stub_session(base, settings=None):
    """A subclass of the SDK's Session that makes no boto calls: a region, a bucket, no config."""

    class StubSession(base):
        def __init__(self, *args, **kwargs):
            self.boto_session = None
            self._region_name = "us-east-1"
            self.sagemaker_config = None
            self.config = None
            self.local_mode = False
            self._default_bucket = "stub-bucket"
            self._default_bucket_name_override = None
            self.default_bucket_prefix = None
            self._default_bucket_set_by_sdk = False
            if settings is not None:
                self.settings = settings()
            self.s3_client = self.s3_resource = self.sagemaker_client = (
                self.sagemaker_runtime_client
            ) = None

        @property
        def boto_region_name(self):
            return "us-east-1"

        def default_bucket(self):
            return "stub-bucket"

    return StubSession


def v2_mode():
    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    import sagemaker
    import sagemaker.session

    StubSession = stub_session(
        sagemaker.session.Session, settings=sagemaker.session.SessionSettings
    )

    sagemaker.Session = StubSession
    sagemaker.session.Session = StubSession
    sagemaker.get_execution_role = lambda *a, **k: "arn:aws:iam::111111111111:role/StubRole"
    res = Results("sdk-v2")
    work = tempfile.mkdtemp()
    for q in plans():
        p = query_of(q)
        for fmt in ("pytorch", "huggingface"):

            def one(q=q, fmt=fmt, p=p):
                g = run_snippet(export(q, fmt), work)
                est = g["estimator"]
                assert est.instance_type == p["instance"], est.instance_type
                assert est.instance_count == int(p["nodes"]), est.instance_count
                uri = est.training_image_uri()
                assert ".dkr.ecr.us-east-1.amazonaws.com/" in uri, uri
                smp = (
                    fmt == "pytorch" and expected_smp(q) and not p["instance"].startswith(BLACKWELL)
                )
                dist = est.distribution
                assert dist.get("torch_distributed", {}).get("enabled") is True, dist
                assert ("smdistributed" in dist) == smp, f"SMP expected={smp}: {dist}"
                if smp:
                    assert "smdistributed-modelparallel" in uri, uri
                elif fmt == "pytorch":
                    assert "pytorch-training:2.8.0-gpu-py312" in uri, uri
                else:
                    assert (
                        "huggingface-pytorch-training:2.8.0-transformers4.56.2-gpu-py312-cu129"
                        in uri
                    ), uri
                if p["instance"].startswith(BLACKWELL):
                    assert ":2.8.0-" in uri, (
                        f"Blackwell needs CUDA >= 12.8 (PyTorch >= 2.7.1): {uri}"
                    )
                hp = g["hyperparameters"]
                grpo = p.get("stage") == "grpo" and "entry" not in p
                assert (est.entry_point == "grpo.py") == grpo, est.entry_point
                if grpo:
                    assert hp["num_generations"] == int(p.get("generations", 8)), hp
                    assert hp["vllm_gpu_memory_utilization"] == float(p.get("gen_share", 0.3)), hp
                assert hp["per_device_train_batch_size"] == int(p.get("mb", 1))
                assert hp["gradient_accumulation_steps"] == int(p.get("ga", 8))
                assert est.max_run >= 3600
                assert est.use_spot_instances == (p.get("spot") == "1")
                if est.use_spot_instances:
                    assert est.max_wait >= est.max_run

            res.check(f"{fmt} {q}", one)
    os.environ["NEMO_IMAGE_URI"] = NEMO_IMAGE
    for q in MEGATRON:
        p = query_of(q)
        for fmt in ("pytorch", "huggingface"):

            def nemo(q=q, fmt=fmt, p=p):
                g = run_snippet(export(q, fmt), work)
                est = g["estimator"]
                assert est.training_image_uri() == NEMO_IMAGE, est.training_image_uri()
                assert est.entry_point == "pretrain_megatron_bridge.py", est.entry_point
                assert est.instance_type == p["instance"] and est.instance_count == int(p["nodes"])
                assert est.distribution == {"torch_distributed": {"enabled": True}}, (
                    est.distribution
                )
                assert g["hyperparameters"]["max_steps"] == planned_steps(q)
                assert est.use_spot_instances == (p.get("spot") == "1")

            res.check(f"megatron {fmt} {q}", nemo)
    for q in GRPO_SERVER:
        p = query_of(q)
        for fmt in ("pytorch", "huggingface"):

            def server(q=q, fmt=fmt, p=p):
                g = run_snippet(export(q, fmt), work)
                est = g["estimator"]
                assert est.entry_point == "grpo.py" and not est.distribution, (
                    est.distribution
                )  # None is kept as {}
                assert g["hyperparameters"]["vllm_server_gpus"] == int(p["gen_gpus"]), g[
                    "hyperparameters"
                ]

            res.check(f"grpo server {fmt} {q}", server)
    for q, arn, servers in CAPACITY:
        for fmt in ("pytorch", "huggingface"):

            def capacity(q=q, fmt=fmt, arn=arn, servers=servers):
                from sagemaker.job import _Job

                est = run_snippet(export(q, fmt), work)["estimator"]
                assert est.training_plan == arn, est.training_plan
                placement = est.instance_placement_config
                if servers is None:
                    assert placement is None, placement
                else:
                    specs = placement["PlacementSpecifications"]
                    assert [s["InstanceCount"] for s in specs] == servers, placement
                    assert sum(servers) == est.instance_count
                config = _Job._prepare_resource_config(
                    est.instance_count, est.instance_type, None, est.volume_size, None, None,
                    est.training_plan, est.instance_placement_config,
                )  # fmt: skip
                assert config.get("TrainingPlanArn") == arn, config
                accepted_resource_config(config)

            res.check(f"capacity {fmt} {q}", capacity)
    return res.close()


def v3_mode():
    import sagemaker.core.helper.session_helper as sh
    import sagemaker.train.defaults as defaults
    from sagemaker.train.distributed import Torchrun

    StubSession = stub_session(sh.Session)

    sh.Session = StubSession
    sh.get_execution_role = lambda *a, **k: "arn:aws:iam::111111111111:role/StubRole"
    # Role validation calls IAM; with no credentials it is the identity.
    defaults.TrainDefaults.get_role = staticmethod(lambda role=None, sagemaker_session=None: role)
    res = Results("sdk-v3")
    work = tempfile.mkdtemp()
    for q in plans():
        p = query_of(q)

        def one(q=q, p=p):
            g = run_snippet(export(q, "modeltrainer"), work)
            t = g["trainer"]
            assert t.compute.instance_type == p["instance"], t.compute.instance_type
            assert t.compute.instance_count == int(p["nodes"])
            smp = expected_smp(q) and not p["instance"].startswith(BLACKWELL)
            img = t.training_image
            assert ".dkr.ecr.us-east-1.amazonaws.com/" in img, img
            assert ("smdistributed-modelparallel" in img) == smp, f"SMP expected={smp}: {img}"
            assert isinstance(t.distributed, Torchrun)
            assert (t.distributed.smp is not None) == smp
            gpn = GPUS_PER_NODE.get(p["instance"], 8)
            assert t.distributed.process_count_per_node == gpn, t.distributed.process_count_per_node
            assert t.stopping_condition.max_runtime_in_seconds >= 3600
            assert bool(t.compute.enable_managed_spot_training) == (p.get("spot") == "1")
            assert t.hyperparameters["per_device_train_batch_size"] == int(p.get("mb", 1))

        res.check(f"modeltrainer {q}", one)
    os.environ["NEMO_IMAGE_URI"] = NEMO_IMAGE
    for q in MEGATRON:
        p = query_of(q)

        def nemo(q=q, p=p):
            t = run_snippet(export(q, "modeltrainer"), work)["trainer"]
            assert t.training_image == NEMO_IMAGE, t.training_image
            assert t.source_code.entry_script == "pretrain_megatron_bridge.py"
            assert t.compute.instance_type == p["instance"] and t.compute.instance_count == int(
                p["nodes"]
            )
            assert t.distributed.process_count_per_node == GPUS_PER_NODE.get(p["instance"], 8)
            assert t.hyperparameters["max_steps"] == planned_steps(q)

        res.check(f"megatron modeltrainer {q}", nemo)
    for q in GRPO_SERVER:
        p = query_of(q)

        def server(q=q, p=p):
            t = run_snippet(export(q, "modeltrainer"), work)["trainer"]
            assert t.source_code.entry_script == "grpo.py" and t.distributed is None, t.distributed
            assert t.compute.instance_count == 1
            assert t.hyperparameters["vllm_server_gpus"] == int(p["gen_gpus"]), t.hyperparameters

        res.check(f"grpo server modeltrainer {q}", server)
    for q, arn, servers in CAPACITY:

        def capacity(q=q, arn=arn, servers=servers):
            from sagemaker.core.utils.utils import serialize

            t = run_snippet(export(q, "modeltrainer"), work)["trainer"]
            config = serialize(t.compute._to_resource_config())
            assert config.get("TrainingPlanArn") == arn, config
            placement = config.get("InstancePlacementConfig")
            if servers is None:
                assert placement is None, placement
            else:
                specs = placement["PlacementSpecifications"]
                assert [s["InstanceCount"] for s in specs] == servers, placement
            accepted_resource_config(config)

        res.check(f"capacity modeltrainer {q}", capacity)
    return res.close()


# HyperPod (#58): the plans. 8B FSDP on 4 P6-B200 nodes; the 405B
# GB200 plan on two x72 UltraServers (preferred topology) and on one
# (required); a GRPO plan whose grpo.py starts its vLLM server itself.
HYPERPOD = [
    "model=llama-3.1-8b&instance=ml.p6-b200.48xlarge&nodes=4&zero=3",
    "model=llama-3.1-405b&stack=megatron&instance=ml.p6e-gb200.36xlarge&nodes=32&ultraserver=72",
    "model=llama-3.1-405b&stack=megatron&instance=ml.p6e-gb200.36xlarge&nodes=18&ultraserver=72",
    GRPO_SERVER[0],
]


def hyperpod_body(yaml_text, workdir):
    """config.yaml as `hyp create` reads it, and the job body `create()` would submit."""
    import pathlib

    from hyperpod_pytorch_job_template.registry import SCHEMA_REGISTRY
    from sagemaker.hyperpod.cli.init_utils import load_config_and_validate
    from sagemaker.hyperpod.training.hyperpod_pytorch_job import (
        HyperPodPytorchJob,
        _HyperPodPytorchJob,
    )

    path = pathlib.Path(workdir)
    (path / "config.yaml").write_text(yaml_text)
    data, template, version = load_config_and_validate(path)
    assert (template, version) == ("hyp-pytorch-job", "1.1"), (template, version)
    fields = {k: v for k, v in data.items() if k not in ("template", "version")}
    job = SCHEMA_REGISTRY[version](**fields).to_domain()
    spec = _HyperPodPytorchJob(**job.model_dump(by_alias=True, exclude_none=True))
    spec = HyperPodPytorchJob.allocate_quotas_if_applicable(spec)
    return fields, spec.model_dump(exclude_none=True)


def hyperpod_mode():
    import json

    from sagemaker.hyperpod.training.constants import INSTANCE_RESOURCES

    res = Results("sdk-hyperpod")
    work = tempfile.mkdtemp()
    for q in HYPERPOD:
        p = query_of(q)

        def one(q=q, p=p):
            fields, body = hyperpod_body(export(q, "hyperpod"), work)
            replica = body["replicaSpecs"][0]
            nodes = int(p.get("nodes", 1))
            assert replica["replicas"] == nodes, replica["replicas"]
            pod = replica["template"]
            container = pod["spec"]["containers"][0]
            gpus = GPUS_PER_NODE.get(p["instance"], 8 if "gb200" not in p["instance"] else 4)
            server = "gen_gpus" in p
            if server:
                assert container["command"][0] == "python3", container["command"]
            else:
                assert container["command"][:3] == [
                    "hyperpodrun",
                    f"--nnodes={nodes}",
                    f"--nproc-per-node={gpus}",
                ], container["command"]
            args = container["args"]
            planned = dict(zip(args[::2], args[1::2], strict=True))
            assert query_of(planned["--plan"])["model"] == p["model"], planned["--plan"]
            assert int(planned["--max_steps"]) == planned_steps(q)
            limits = container["resources"]["limits"]
            efa = INSTANCE_RESOURCES[p["instance"]]["efa"]
            assert int(limits.get("vpc.amazonaws.com/efa", 0)) == efa, limits
            assert pod["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] == p["instance"]
            annotations = pod["metadata"].get("annotations", {})
            if "gb200" in p["instance"]:
                one_server = nodes <= 18
                key = "required" if one_server else "preferred"
                wanted = {
                    f"kueue.x-k8s.io/podset-{key}-topology": "topology.k8s.aws/ultraserver-id"
                }
                assert annotations == wanted, annotations
            else:
                assert not annotations, annotations
            assert body["runPolicy"]["jobMaxRetryCount"] == 3, body.get("runPolicy")
            mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
            assert mounts["checkpoints"] == "/opt/ml/checkpoints", mounts
            # train.py saves there; grpo.py and the Megatron launcher save under it too.
            assert planned.get("--output_dir", "/opt/ml/checkpoints") == "/opt/ml/checkpoints"

        res.check(f"hyperpod {q}", one)

    # The package refuses an EFA request on GB200, so the export must never make one.
    def gb200_refuses_efa():
        text = export(HYPERPOD[1], "hyperpod") + "efa: 1\nefa_limit: 1\n"
        try:
            hyperpod_body(text, work)
        except ValueError as e:
            assert "efa" in str(e).lower(), e
            return
        raise AssertionError("an EFA request on ml.p6e-gb200.36xlarge was accepted")

    res.check("hyperpod refuses EFA on GB200", gb200_refuses_efa)

    # EFA per instance, as the package allocates it, for every catalogue instance.
    with open("crates/planner/data/hardware.json") as f:
        catalogue = json.load(f)["instances"]
    for inst in catalogue:
        t = inst["instance_type"]

        def efa(t=t):
            fields, _ = hyperpod_body(export(f"model=llama-3.2-1b&instance={t}", "hyperpod"), work)
            assert fields.get("efa", 0) == INSTANCE_RESOURCES[t]["efa"], (t, fields.get("efa"))

        res.check(f"hyperpod efa {t}", efa)
    return res.close()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "syntax"
    modes = {"syntax": syntax_mode, "v2": v2_mode, "v3": v3_mode, "hyperpod": hyperpod_mode}
    sys.exit(modes[mode]())
