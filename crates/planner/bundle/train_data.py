"""The data and the loss as the plan trains them (train.py's third part):
packed blocks or preference pairs, the next-token loss and DPO's."""

import glob
import json
import os

from train_model import attention_as_planned, data_parallel_mesh, decoder_layers, dtype_key
from train_plan import PlanError

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
