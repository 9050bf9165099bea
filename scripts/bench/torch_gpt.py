"""PyTorch (CPU, eager) reference for `whale bench runtime`: the project's GPT-2-style model (pre-LayerNorm,
fused QKV, causal softmax attention, gelu_new, learned positions, final LayerNorm, LM head tied to the token
embedding, biases everywhere as in GPT-2), timed on the same shapes and thread count as the project's trainer
and sampler.

  training:   one forward + backward + global-norm clipping + AdamW step on a [rows x seq] batch of random
              tokens, all targets weighted (token-mean cross entropy), AdamW decay on matrices and embeddings
  generation: batch of distinct random prompts, prefill then KV-cache decoding of a fixed number of new tokens
              per row with temperature 1 and top-k sampling (no stop tokens); time includes prefill
  rollout:    the same at the batch of a rollout step (--rollout-prompts distinct prompts x --rollout-samples
              rows each): each distinct prompt is prefilled once and its K/V repeated for its samples

Prints one line `RESULT {json}`. Install torch into the project (PyPI's standard wheel):
  python3 -m venv .tools/torch-venv && .tools/torch-venv/bin/pip install torch
"""
import argparse
import json
import math
import statistics
import time
import warnings

# torch warns at import when numpy is absent; this benchmark does not use numpy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Block(nn.Module):
    def __init__(self, d, heads, eps):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.c_attn = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def attention(self, x, cache=None):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            if cache.get("k") is not None:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        # A single new token attends to the whole cache; a prompt (or a training batch) is causal.
        y = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1)
        return self.attn_proj(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, x, cache=None):
        x = x + self.attention(self.ln_1(x), cache)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, ctx, d, layers, heads, eps):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.h = nn.ModuleList(Block(d, heads, eps) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d, eps=eps)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, caches=None, start=0):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(start, start + t))
        for i, block in enumerate(self.h):
            x = block(x, None if caches is None else caches[i])
        return self.ln_f(x) @ self.wte.weight.T  # tied LM head


def adamw(model, lr, weight_decay):
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() != 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8)


def bench_train(model, rows, seq, vocab, steps, warmup):
    opt = adamw(model, 1e-3, 0.1)
    g = torch.Generator().manual_seed(2)
    tokens = torch.randint(0, 256, (rows, seq + 1), generator=g)
    x, y = tokens[:, :-1], tokens[:, 1:]
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    med, best = statistics.median(times), min(times)
    tok = rows * seq
    return {"medianMs": med * 1000, "bestMs": best * 1000, "tokensPerSec": tok / med, "bestTokensPerSec": tok / best}


@torch.inference_mode()
def generate(model, prompts, new_tokens, top_k, layers, samples=1):
    caches = [{} for _ in range(layers)]
    logits = model(prompts, caches, 0)[:, -1, :]
    if samples > 1:
        # Rows sampling from the same prompt share its prefill: repeat its K/V and last logits per sample.
        logits = logits.repeat_interleave(samples, dim=0)
        for cache in caches:
            cache["k"] = cache["k"].repeat_interleave(samples, dim=0)
            cache["v"] = cache["v"].repeat_interleave(samples, dim=0)
    pos = prompts.shape[1]
    out = []
    for _ in range(new_tokens):
        values, indices = torch.topk(logits, top_k, dim=-1)
        choice = torch.multinomial(F.softmax(values, dim=-1), 1)
        nxt = indices.gather(-1, choice)
        out.append(nxt)
        logits = model(nxt, caches, pos)[:, -1, :]
        pos += 1
    return torch.cat(out, dim=1)


def bench_generate(model, batch, prompt_len, new_tokens, top_k, layers, reps, samples=1):
    g = torch.Generator().manual_seed(3)
    prompts = torch.randint(0, 256, (batch // samples, prompt_len), generator=g)
    generate(model, prompts[:1], 8, top_k, layers)
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = generate(model, prompts, new_tokens, top_k, layers, samples)
        rates.append(out.numel() / (time.perf_counter() - t0))
    return {"median": statistics.median(rates), "best": max(rates)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="model config JSON (vocabSize, contextLength, dModel, nLayers, nHeads, layerNormEps)")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--gen-batch", type=int, default=32)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--gen-reps", type=int, default=5)
    ap.add_argument("--rollout-prompts", type=int, default=0, help="0: no rollout-batch generation")
    ap.add_argument("--rollout-samples", type=int, default=8)
    ap.add_argument("--rollout-reps", type=int, default=3)
    a = ap.parse_args()
    c = json.loads(a.config)
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(1)
    model = GPT(c["vocabSize"], c["contextLength"], c["dModel"], c["nLayers"], c["nHeads"], c["layerNormEps"])
    params = sum(p.numel() for p in model.parameters())
    train = bench_train(model, a.rows, a.seq, c["vocabSize"], a.steps, 2)
    model.eval()
    gen = bench_generate(model, a.gen_batch, a.prompt_len, a.new_tokens, a.top_k, c["nLayers"], a.gen_reps)
    rollout = None
    if a.rollout_prompts > 0:
        rows = a.rollout_prompts * a.rollout_samples
        rollout = bench_generate(model, rows, a.prompt_len, a.new_tokens, a.top_k, c["nLayers"], a.rollout_reps, a.rollout_samples)
    print("RESULT " + json.dumps({
        "torch": torch.__version__, "threads": torch.get_num_threads(), "params": params,
        "mkldnn": torch.backends.mkldnn.is_available(), "train": train, "generate": gen,
        "rollout": rollout,
    }), flush=True)


if __name__ == "__main__":
    main()
