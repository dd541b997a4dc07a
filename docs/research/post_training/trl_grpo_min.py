# Minimal one-step GRPO on CPU with transformers generate (use_vllm=False), fully offline.
# Target: trl==0.24.0, transformers==4.56.2, accelerate==1.10.1, torch==2.8, datasets>=3.
# NOTE: written from the TRL v0.24.0 source; NOT executed here (no packages may be installed on this machine).
import tempfile

from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

words = "the sky is blue green red sun hot cold water wet dry what color of".split()
vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words)}}
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(
    tokenizer_object=tk,
    pad_token="<pad>",
    eos_token="<eos>",
    unk_token="<unk>",
    truncation_side="left",
)  # GRPO itself uses truncation_side="left" when it loads the processor

config = LlamaConfig(
    vocab_size=len(vocab),
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    pad_token_id=0,
    eos_token_id=1,
    bos_token_id=None,
)
model_dir = tempfile.mkdtemp()
LlamaForCausalLM(config).save_pretrained(
    model_dir
)  # a path is needed if beta>0 (ref is re-loaded by path)
tokenizer.save_pretrained(model_dir)

train_dataset = Dataset.from_dict(
    {"prompt": ["what color is the sky", "what color is the sun", "water is", "the sun is"]}
)  # "standard prompt-only" format


def reward_len(completions, **kwargs):  # toy reward: prefer short completions
    return [-float(len(c)) for c in completions]


args = GRPOConfig(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=4,  # counts COMPLETIONS, not prompts
    num_generations=2,  # >=2; generation_batch_size (=4*1*1) must be divisible by it
    max_prompt_length=32,
    max_completion_length=8,
    max_steps=1,
    learning_rate=1e-5,
    beta=0.0,  # default in 0.24 -> no reference model; set e.g. 0.04 to load one
    loss_type="dapo",  # default in 0.24
    use_vllm=False,  # default: transformers .generate()
    use_cpu=True,
    bf16=False,  # GRPOConfig.__post_init__ would otherwise set bf16=True
    gradient_checkpointing=False,  # default True since v0.22
    report_to="none",
    save_strategy="no",
    logging_steps=1,
)
trainer = GRPOTrainer(
    model=model_dir,
    reward_funcs=reward_len,
    args=args,
    train_dataset=train_dataset,
    processing_class=tokenizer,
)
trainer.train()
print(trainer.state.log_history[-1])
