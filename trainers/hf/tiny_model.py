# Makes a small random Qwen2-architecture model folder offline (no downloads): a byte-level BPE tokenizer
# trained on a few sentences, a ChatML chat template, and a generation config that samples. For tests, the
# GPU benchmark's CPU mode, and trying the trainer without a real model.
#   python trainers/hf/tiny_model.py <folder> [--hidden 64] [--layers 2] [--seed 0]
import argparse
import json
import os

CHATML = (
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "What is 3 + 4? Use the calculator: <calc>3+4</calc> = 7. The answer is 7.",
    "You are a helpful assistant. Answer with a number.",
    "The quick brown fox jumps over the lazy dog 0123456789.",
    "Search for the capital of France, then answer: Paris.",
]


def make_tokenizer(vocab_size):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS * 4, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None, unk_token=None)
    fast.chat_template = CHATML
    return fast


def make_tiny_qwen2(folder, hidden=64, layers=2, heads=4, kv_heads=2, vocab_size=512, seed=0, max_positions=2048):
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM
    tok = make_tokenizer(vocab_size)
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=max(vocab_size, len(tok)), hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=max_positions,
                         tie_word_embeddings=True, eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                         pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"), bos_token_id=None)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                                               eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id)
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    return folder


def main():
    p = argparse.ArgumentParser(description="make a small random Qwen2-architecture model folder (offline)")
    p.add_argument("folder")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    make_tiny_qwen2(a.folder, hidden=a.hidden, layers=a.layers, seed=a.seed)
    with open(os.path.join(a.folder, "config.json")) as f:
        cfg = json.load(f)
    print(json.dumps({"folder": os.path.abspath(a.folder), "model_type": cfg["model_type"], "hidden_size": cfg["hidden_size"]}))


if __name__ == "__main__":
    main()
