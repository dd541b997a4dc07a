#!/usr/bin/env python3
"""Train Planner's GRPO script for SageMaker (TRL's GRPOTrainer, vLLM colocated or as a server).

It runs exactly the GRPO step the planner modelled (#38): every optimizer step
generates --num_generations completions of up to --max_completion_length tokens
per prompt with a vLLM engine inside --vllm_gpu_memory_utilization of each
training GPU (TRL's vllm_mode="colocate", over --vllm_tensor_parallel_size
GPUs) or, with --vllm_server_gpus N, on a `trl vllm-serve` server on the
instance's first N GPUs (vllm_mode="server": this script, run once on the
instance, starts the server there and torchrun on the other GPUs), scores them (the old policy's log-probabilities, and a frozen
reference's when --beta > 0), then trains on the rows with TRL's "dapo" loss
over the completions. SageMaker passes the launcher's hyperparameters as
`--name value` arguments, the same names as train.py's; a setting the planner
modelled differently is refused with one clear line (exit code 2):

  --zero_stage      0 DDP, or 3 FSDP2 full shard (through accelerate)
  --precision       bf16 only (fp32 weights under BF16 mixed precision; vLLM in BF16)
  --checkpointing   none | full
  --train_mode      full | lora (PEFT, --lora_r, --lora_alpha, --lora_targets)

Data: the `train` channel (SM_CHANNEL_TRAIN) holds JSON Lines files, each line
with a `prompt` (and any other field, which the reward receives by name). A
prompt keeps its last --max_seq_length - --max_completion_length tokens.
Rewards: `reward(completions, **fields)` from a `rewards.py` next to this
script if there is one; otherwise `answer_reward` below (1 where the line's
`answer` appears in the completion, else 0; without an `answer`, 1 for any
non-empty completion).

Every run ends by printing one line that starts with TRAIN_PLANNER_MEASURED
(paste it into the planner to compare measured with predicted).
"""

import argparse
import glob
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
import urllib.request

MEASURED_TAG = "TRAIN_PLANNER_MEASURED"
SERVER_PORT = 8000
SERVER_START_SECONDS = 1800  # loading a large model into vLLM takes minutes
LINE_VERSION = 1
# The planner's lora_targets as PEFT module names, as train.py names them (tests/bundle
# checks the two scripts agree): MLA's query and key/value projections count as q and k, v.
MLA_QUERY = ("q_a_proj", "q_b_proj")
MLA_KEY_VALUE = ("kv_a_proj_with_mqa", "kv_b_proj")
ATTENTION_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj") + MLA_QUERY + MLA_KEY_VALUE
LORA_TARGETS = ATTENTION_TARGETS + ("gate_proj", "up_proj", "down_proj", "w1", "w2", "w3")
LORA_TARGET_SETS = {
    "all-linear": LORA_TARGETS,
    "attention": ATTENTION_TARGETS,
    "q,v": ("q_proj", "v_proj") + MLA_QUERY + MLA_KEY_VALUE,
}
LORA_FAMILY_NAMES = {
    "gate_proj": ("gate_proj", "w1"),
    "up_proj": ("up_proj", "w3"),
    "down_proj": ("down_proj", "w2"),
}
# TRL's PyTorch Trainer names for the planner's optimizers.
OPTIMIZERS = {
    "adamw": "adamw_torch_fused",
    "adamw-foreach": "adamw_torch",
    "adamw8bit": "adamw_bnb_8bit",
    "adafactor": "adafactor",
    "sgd": "sgd",
}


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


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model_id", default="", help="a Hub id or a local directory")
    p.add_argument("--plan", default="", help="the planner's query for this plan")
    p.add_argument("--max_seq_length", type=int, required=True, help="prompt + completion")
    p.add_argument("--per_device_train_batch_size", type=int, default=1, help="rows (completions)")
    p.add_argument("--gradient_accumulation_steps", type=int, default=1)
    p.add_argument("--max_steps", type=int, required=True)
    p.add_argument("--learning_rate", type=float, default=1e-6, help="TRL's GRPO default")
    p.add_argument("--precision", default="bf16")
    p.add_argument("--checkpointing", default="none")
    p.add_argument("--activation_offloading", type=str2bool, default=False)
    p.add_argument("--zero_stage", type=int, choices=(0, 1, 2, 3), default=3)
    p.add_argument("--shard_degree", type=int, default=0)
    p.add_argument("--planned_world_size", type=int, default=0)
    for name in ("tp", "pp", "cp", "ep"):
        p.add_argument(f"--{name}", type=int, default=1)
    p.add_argument("--sequence_parallel", type=str2bool, default=False)
    p.add_argument("--attn_implementation", choices=("sdpa", "eager"), default="sdpa")
    p.add_argument("--loss", choices=("plain", "fused"), default="plain")
    p.add_argument("--optim", choices=tuple(OPTIMIZERS), default="adamw")
    p.add_argument("--train_mode", choices=("full", "lora", "qlora"), default="full")
    p.add_argument("--lora_r", type=int, default=16)
    p.add_argument("--lora_alpha", type=int, default=0, help="0 = twice the rank")
    p.add_argument(
        "--lora_targets",
        default="all-linear",
        help="all-linear, attention, q,v or PEFT module names (q_proj,v_proj)",
    )
    p.add_argument("--lora_dtype", choices=("fp32", "bf16"), default="fp32")
    p.add_argument("--stage", choices=("grpo",), default="grpo")
    p.add_argument("--num_generations", type=int, default=8)
    p.add_argument("--max_completion_length", type=int, default=256)
    p.add_argument("--beta", type=float, default=0.0, help="the KL penalty (TRL's default 0)")
    p.add_argument(
        "--use_vllm",
        type=str2bool,
        default=True,
        help="False: Transformers generates (CPU tests; not what the planner times)",
    )
    p.add_argument("--vllm_gpu_memory_utilization", type=float, default=0.3)
    p.add_argument("--vllm_tensor_parallel_size", type=int, default=1)
    p.add_argument(
        "--vllm_server_gpus",
        type=int,
        default=0,
        help="GPUs for a `trl vllm-serve` server (0: vLLM colocated with training)",
    )
    p.add_argument(
        "--vllm_enable_sleep_mode",
        type=str2bool,
        default=False,
        help="colocated vLLM offloads its weights and drops its KV cache while training",
    )
    p.add_argument("--save_steps", type=int, default=0, help="0 = only at the end")
    p.add_argument("--save", choices=("full", "weights", "adapter"), default="full")
    p.add_argument("--async_save", type=str2bool, default=False)
    p.add_argument("--output_dir", default="/opt/ml/checkpoints")
    p.add_argument("--model_dir", default=os.environ.get("SM_MODEL_DIR", ""))
    p.add_argument("--data_dir", default=os.environ.get("SM_CHANNEL_TRAIN", ""))
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--log_steps", type=int, default=10)
    return p.parse_args(argv)


def world_size():
    return int(os.environ.get("WORLD_SIZE", "1"))


def refusals(args):
    """The settings this script does not run as the planner modelled them (its grpo_refusal)."""
    world = world_size()
    rules = [
        (
            args.tp > 1 or args.pp > 1 or args.cp > 1 or args.ep > 1,
            "GRPO trains data parallel here: use tp=pp=cp=ep=1",
        ),
        (args.zero_stage in (1, 2), "zero=1/2 would need DeepSpeed: use zero=3 (FSDP2) or 0 (DDP)"),
        (
            args.zero_stage == 3 and 0 < args.shard_degree < world,
            "hybrid sharding is not run here: shard over every rank",
        ),
        (args.precision != "bf16", f"precision={args.precision}: GRPO runs in BF16 here"),
        (
            args.checkpointing not in ("none", "full"),
            f"checkpointing={args.checkpointing}: use none or full",
        ),
        (args.activation_offloading, "activation offloading is not run here"),
        (args.loss != "plain", "loss=fused: TRL computes its own loss over the completion"),
        (args.train_mode == "qlora", "QLoRA: vLLM takes merged weights, a 4-bit base has none"),
        (
            args.train_mode != "full" and args.lora_dtype != "fp32",
            "lora_dtype=bf16: TRL's GRPOTrainer keeps PEFT's FP32 adapters",
        ),
        (
            args.max_completion_length >= args.max_seq_length,
            "the completion must be shorter than max_seq_length (the prompt comes first)",
        ),
        (args.save == "full" and args.async_save, "async_save is not run here"),
        # TRL 0.24 wraps the reference in FSDP1 with FSDP2's policy, which fails (trl#3581).
        (
            args.beta > 0 and args.train_mode == "full" and args.zero_stage == 3 and world > 1,
            "a reference model (beta > 0) under FSDP2: use beta=0, LoRA or zero=0",
        ),
    ]
    return [why for bad, why in rules if bad]


def answer_reward(completions, answer=None, **_):
    """1 where the line's `answer` is in the completion; without one, 1 for a non-empty one."""
    out = []
    for i, c in enumerate(completions):
        text = c if isinstance(c, str) else " ".join(m.get("content", "") for m in c)
        if answer is not None and answer[i] is not None:
            out.append(1.0 if str(answer[i]).strip() and str(answer[i]).strip() in text else 0.0)
        else:
            out.append(1.0 if text.strip() else 0.0)
    return out


def reward_function():
    """`reward` from rewards.py beside this script, or `answer_reward`."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rewards.py")
    if not os.path.exists(path):
        return answer_reward
    spec = importlib.util.spec_from_file_location("rewards", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "reward", None)):
        raise PlanError(f"{path} has no reward(completions, **fields) function")
    return module.reward


def load_prompts(data_dir):
    """The `prompt` lines of the channel's JSON Lines files, as a datasets.Dataset."""
    from datasets import Dataset

    rows = []
    for path in sorted(glob.glob(os.path.join(data_dir, "**", "*.jsonl"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                row = json.loads(line)
                if not isinstance(row, dict) or not isinstance(row.get("prompt"), (str, list)):
                    raise PlanError(f"{path}:{number}: each line needs a `prompt`")
                rows.append(row)
    if not rows:
        raise PlanError(f"no JSON Lines prompts under {data_dir!r}")
    return Dataset.from_list(rows)


def decoder_layer_class(model_id):
    """The decoder layer's class name FSDP2 wraps one by one (as train.py's fully_shard)."""
    from transformers import AutoConfig

    arch = (AutoConfig.from_pretrained(model_id).architectures or ["LlamaForCausalLM"])[0]
    return arch.replace("ForCausalLM", "DecoderLayer")


def grpo_config(args, use_cpu):
    """GRPOConfig with exactly the planner's settings."""
    from trl import GRPOConfig

    fsdp = args.zero_stage == 3 and world_size() > 1
    full_ckpt = args.checkpointing == "full"
    kwargs = {}
    if fsdp:
        kwargs["fsdp"] = "full_shard auto_wrap"
        kwargs["fsdp_config"] = {
            "fsdp_version": 2,
            "reshard_after_forward": True,
            "transformer_layer_cls_to_wrap": [decoder_layer_class(args.model_id)],
            "activation_checkpointing": full_ckpt,
            # Whole tensors on save: save_model writes the model (every rank takes part).
            "state_dict_type": "FULL_STATE_DICT",
        }
    if args.use_vllm and args.vllm_server_gpus:
        kwargs.update(
            vllm_mode="server",
            vllm_server_host="127.0.0.1",
            vllm_server_port=SERVER_PORT,
            vllm_server_timeout=SERVER_START_SECONDS,
        )
    elif args.use_vllm:
        kwargs.update(
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=args.vllm_gpu_memory_utilization,
            vllm_tensor_parallel_size=args.vllm_tensor_parallel_size,
            vllm_enable_sleep_mode=args.vllm_enable_sleep_mode,
        )
    return GRPOConfig(
        output_dir=args.output_dir,
        per_device_train_batch_size=args.per_device_train_batch_size,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        num_generations=args.num_generations,
        max_prompt_length=args.max_seq_length - args.max_completion_length,
        max_completion_length=args.max_completion_length,
        beta=args.beta,
        loss_type="dapo",
        use_vllm=args.use_vllm,
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        optim=OPTIMIZERS[args.optim] if not (use_cpu and args.optim == "adamw") else "adamw_torch",
        bf16=True,
        use_cpu=use_cpu,
        gradient_checkpointing=full_ckpt and not fsdp,
        # DDP marks each parameter ready once: reentrant checkpoints would mark it twice.
        gradient_checkpointing_kwargs={"use_reentrant": False},
        ddp_find_unused_parameters=False,
        model_init_kwargs={
            "dtype": "float32" if args.train_mode == "full" else "bfloat16",
            "attn_implementation": args.attn_implementation,
        },
        save_strategy="steps" if args.save_steps else "no",
        save_steps=args.save_steps or 500,
        save_only_model=args.save != "full",
        logging_steps=1,
        report_to="none",
        seed=args.seed,
        **kwargs,
    )


def lora_config(args):
    if args.train_mode == "full":
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=args.lora_r,
        lora_alpha=args.lora_alpha or 2 * args.lora_r,
        lora_dropout=0.0,
        target_modules=list(lora_target_names(args.lora_targets)),
        task_type="CAUSAL_LM",
    )


def lora_target_names(targets):
    """The PEFT module names of the planner's lora_targets, as train.py reads them."""
    if targets in LORA_TARGET_SETS:
        return LORA_TARGET_SETS[targets]
    names = [n.strip() for n in targets.split(",") if n.strip()]
    if not names or any(n not in LORA_TARGETS for n in names):
        raise PlanError(
            f"--lora_targets {targets!r}: expected one of {', '.join(LORA_TARGET_SETS)} "
            f"or module names among {', '.join(LORA_TARGETS)}"
        )
    return tuple(alias for n in names for alias in LORA_FAMILY_NAMES.get(n, (n,)))


class StepTimes:
    """A TrainerCallback that keeps each optimizer step's wall time (generation included)."""

    def __init__(self):
        self.times, self.start = [], None

    def on_step_begin(self, *_, **__):
        self.start = time.perf_counter()

    def on_step_end(self, *_, **__):
        if self.start is not None:
            self.times.append(time.perf_counter() - self.start)


def train(args):
    import torch
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOTrainer

    problems = refusals(args)
    if problems:
        raise PlanError("; ".join(problems))
    use_cpu = not torch.cuda.is_available()
    tokenizer = AutoTokenizer.from_pretrained(
        args.model_id, truncation_side="left", model_input_names=["input_ids", "attention_mask"]
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    times = StepTimes()
    callback = type(
        "PlannerSteps",
        (TrainerCallback,),
        {
            "on_step_begin": lambda self, *a, **k: times.on_step_begin(),
            "on_step_end": lambda self, *a, **k: times.on_step_end(),
        },
    )()
    trainer = GRPOTrainer(
        model=args.model_id,
        reward_funcs=reward_function(),
        args=grpo_config(args, use_cpu),
        train_dataset=load_prompts(args.data_dir),
        processing_class=tokenizer,
        peft_config=lora_config(args),
        callbacks=[callback],
    )
    trainer.train()
    if args.model_dir:
        trainer.save_model(args.model_dir)  # a collective under FSDP2; rank 0 writes
    report_measured(args, trainer, times.times, torch)


def report_measured(args, trainer, times, torch):
    warm = min(3, len(times) // 2)
    steady = times[warm:] or times
    step = sorted(steady)[len(steady) // 2] if steady else None
    rows = args.per_device_train_batch_size * args.gradient_accumulation_steps
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    memory = None
    if torch.cuda.is_available():
        memory = [round(torch.cuda.max_memory_allocated() / float(1 << 30), 3)]
    line = {
        "v": LINE_VERSION,
        "plan": args.plan,
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "world_size": world_size(),
        "steps": len(times),
        "first_step": 1,
        "measured_steps": len(steady),
        "step_time_s": round(step, 6) if step else None,
        "tokens_per_second_per_gpu": round(rows * args.max_seq_length / step, 3) if step else None,
        "max_memory_allocated_gib": memory,
        "compute": "bf16 mixed precision (TRL GRPOTrainer)",
        "loss": round(losses[-1], 5) if losses and math.isfinite(losses[-1]) else None,
    }
    if trainer.is_world_process_zero():
        print(MEASURED_TAG + " " + json.dumps(line, sort_keys=True), flush=True)


def server_commands(args, argv, gpus):
    """The vLLM server on the first --vllm_server_gpus GPUs and torchrun on the others, each as
    (command, environment): the server is --data_parallel_size engines of
    --vllm_tensor_parallel_size GPUs at --vllm_gpu_memory_utilization, as planned."""
    k, tp = args.vllm_server_gpus, args.vllm_tensor_parallel_size
    hosts = json.loads(os.environ.get("SM_HOSTS", "[]"))
    if len(hosts) > 1:
        raise PlanError(
            "a vLLM server runs beside training on one instance: use one instance, "
            "or vLLM colocated (--vllm_server_gpus 0)"
        )
    if not 0 < k < gpus or k % tp:
        raise PlanError(
            f"--vllm_server_gpus {k}: fewer than the instance's {gpus} GPUs, "
            f"in whole engines of {tp}"
        )

    def devices(ids):
        return dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(str(i) for i in ids))

    server = [
        "trl",
        "vllm-serve",
        "--model",
        args.model_id,
        "--tensor_parallel_size",
        str(tp),
        "--data_parallel_size",
        str(k // tp),
        "--gpu_memory_utilization",
        str(args.vllm_gpu_memory_utilization),
        "--max_model_len",
        str(args.max_seq_length),
        "--port",
        str(SERVER_PORT),
    ]
    trainer = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(gpus - k),
        os.path.abspath(__file__),
        *argv,
    ]
    return (server, devices(range(k))), (trainer, devices(range(k, gpus)))


def wait_for_server(server):
    """Until the server answers /health/, or stops (an error), or SERVER_START_SECONDS pass."""
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise PlanError(
                f"the vLLM server stopped with exit code {server.returncode} before it served"
            )
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{SERVER_PORT}/health/", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(5)
    raise PlanError(f"the vLLM server did not answer within {SERVER_START_SECONDS} s")


def launch_with_server(args, argv):
    """Run once per instance: start the server, train under torchrun, stop the server.
    GRPO_DRY_RUN=1 prints the two commands and their GPUs instead (tests)."""
    import torch

    gpus = int(os.environ.get("SM_NUM_GPUS") or torch.cuda.device_count())
    (server_cmd, server_env), (train_cmd, train_env) = server_commands(args, argv, gpus)
    if os.environ.get("GRPO_DRY_RUN"):
        print(
            "GRPO_LAUNCH "
            + json.dumps(
                {
                    "server": server_cmd,
                    "server_gpus": server_env["CUDA_VISIBLE_DEVICES"],
                    "train": train_cmd,
                    "train_gpus": train_env["CUDA_VISIBLE_DEVICES"],
                }
            ),
            flush=True,
        )
        return 0
    server = subprocess.Popen(server_cmd, env=server_env)
    try:
        wait_for_server(server)
        return subprocess.call(train_cmd, env=train_env)
    finally:
        server.terminate()
        try:
            server.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        if args.vllm_server_gpus and args.use_vllm and "LOCAL_RANK" not in os.environ:
            sys.exit(launch_with_server(args, argv))
        train(args)
    except PlanError as e:
        print(f"grpo.py: {e}", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
