# Minimal one-step DPO on CPU, fully offline (tiny random Llama + in-memory WordLevel tokenizer).
# Target: trl==0.24.0, transformers==4.56.2, peft==0.17.1, accelerate==1.10.1, torch==2.8, datasets>=3.
# NOTE: written from the TRL v0.24.0 source; NOT executed here (no packages may be installed on this machine).
import tempfile

from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import DPOConfig, DPOTrainer

words = "the sky is blue green red sun hot cold water wet dry what color of".split()
vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words)}}
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(
    tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
)

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
LlamaForCausalLM(config).save_pretrained(model_dir)  # sets config.architectures -> loadable by path
tokenizer.save_pretrained(model_dir)

train_dataset = Dataset.from_dict(
    {  # "standard preference" format: prompt / chosen / rejected
        "prompt": ["what color is the sky", "what color is the sun", "water is", "the sun is"],
        "chosen": ["blue", "red", "wet", "hot"],
        "rejected": ["green", "blue", "dry", "cold"],
    }
)

args = DPOConfig(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=2,
    max_steps=1,
    learning_rate=1e-5,
    beta=0.1,  # default
    loss_type="sigmoid",  # default
    max_prompt_length=32,
    max_length=64,
    use_cpu=True,
    bf16=False,  # DPOConfig.__post_init__ would otherwise set bf16=True
    gradient_checkpointing=False,  # DPOConfig default is True since v0.22
    report_to="none",
    save_strategy="no",
    logging_steps=1,
)
trainer = DPOTrainer(
    model=model_dir,  # str -> create_model_from_path (fp32 by default on transformers 4.56)
    ref_model=None,  # full FT + None -> create_reference_model() = deepcopy of the policy
    args=args,
    train_dataset=train_dataset,
    processing_class=tokenizer,
)
trainer.train()
print(trainer.state.log_history[-1])
