# The reference trainer's core: one RSFT step on a Hugging Face model folder (full fine-tune or PEFT LoRA
# merged afterwards), from a whale-external-trainer request to a new checkpoint folder and its response.
import json
import os
import shutil
import sys
import time

from protocol import PROTOCOLS, RequestError, minibatch_unit, plan_updates, read_dataset, request_key

# The project's AdamW moments (model/training/trainer.ts DEFAULT_HYPERPARAMS); the request carries lr, decay and clip.
BETAS = (0.9, 0.95)
EPS = 1e-8
WEIGHT_FILES = (".safetensors", ".bin", ".pt", ".pth", ".safetensors.index.json", ".bin.index.json")
ADAPTER_CONFIG = "adapter_config.json"


class Options:
    def __init__(self, device="auto", lora_rank=0, lora_alpha=None, lora_targets="all-linear", threads=None,
                 microbatch_tokens=16384, precision="auto", models_root=None, lora_output="merged", register_lora_url=None):
        self.device = device
        self.lora_rank = lora_rank
        self.lora_alpha = lora_alpha if lora_alpha is not None else 2 * lora_rank
        self.lora_targets = lora_targets
        self.threads = threads
        self.microbatch_tokens = microbatch_tokens
        self.precision = precision
        self.models_root = models_root
        self.lora_output = lora_output
        self.register_lora_url = register_lora_url


def log(line):
    sys.stderr.write(f"[hf-trainer] {line}\n")
    sys.stderr.flush()


def setup_torch(opts, deterministic, seed):
    """Seeds and determinism; must run before the first CUDA call (cuBLAS reads its workspace setting once)."""
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    if opts.threads:
        torch.set_num_threads(opts.threads)
    torch.use_deterministic_algorithms(deterministic)
    if torch.cuda.is_available():
        torch.backends.cudnn.benchmark = not deterministic
        # Fused attention kernels' backward passes are not deterministic; the math kernel is.
        torch.backends.cuda.enable_flash_sdp(not deterministic)
        torch.backends.cuda.enable_mem_efficient_sdp(not deterministic)
    torch.manual_seed(seed)
    device = opts.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch, torch.device(device)


def resolve_base(req, opts):
    """The base folder: the pointer's served name is the folder (as `transformers serve` takes it), or a name under --models-root."""
    base = req["base_checkpoint"]
    name = base.get("model")
    if not name:
        raise RequestError(
            f"base checkpoint {base.get('path')} is a WHALE checkpoint file; this trainer trains Hugging Face folders: "
            "export it with `whale export <checkpoint> --format hf --out <folder>` and start the run from that folder")
    folder = name if os.path.isabs(name) or not opts.models_root else os.path.join(opts.models_root, name)
    if not any(os.path.isfile(os.path.join(folder, f)) for f in ("config.json", ADAPTER_CONFIG)):
        raise RequestError(f"base model {name!r}: {folder} is not a Hugging Face model or adapter folder (no config.json); "
                           "the trainer must see the folder the model is served from (or pass --models-root)")
    return folder


def load_model(torch, folder, opts, seed):
    """The model to train (float32) and the full model folder its tokenizer and files come from. An adapter
    folder loads onto its base: in adapter mode its LoRA trains on; otherwise it is merged first."""
    from transformers import AutoModelForCausalLM
    adapter = os.path.join(folder, ADAPTER_CONFIG)
    full = folder
    if os.path.isfile(adapter):
        with open(adapter) as f:
            full = json.load(f).get("base_model_name_or_path") or ""
        if not os.path.isfile(os.path.join(full, "config.json")):
            raise RequestError(f"adapter {folder}: its base model {full!r} is not a folder this trainer sees")
    model = AutoModelForCausalLM.from_pretrained(full, dtype=torch.float32)
    if full != folder:
        from peft import PeftModel
        keep = opts.lora_rank > 0 and opts.lora_output == "adapter"
        model = PeftModel.from_pretrained(model, folder, is_trainable=keep)
        if keep:
            return model, full
        model = model.merge_and_unload()
    if opts.lora_rank > 0:
        model = apply_lora(torch, model, opts, seed)
    return model, full


def register_adapter(url, folder):
    """Tells a vLLM server (VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, --enable-lora) to load the new adapter under its path."""
    import urllib.request
    body = json.dumps({"lora_name": folder, "lora_path": folder}).encode()
    req = urllib.request.Request(url.rstrip("/") + "/v1/load_lora_adapter", data=body, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as res:
        if res.status >= 300:
            raise RuntimeError(f"{url} did not load adapter {folder}: HTTP {res.status}")


def render_record(tok, rec):
    """Token ids and labels: the model's own chat template; loss only on the last assistant message's tokens."""
    msgs = [{"role": m["role"], "content": m["content"]} for m in rec["messages"]]

    def ids_of(out):
        return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out)

    prompt = ids_of(tok.apply_chat_template(msgs[:-1], add_generation_prompt=True, tokenize=True))
    full = ids_of(tok.apply_chat_template(msgs, tokenize=True))
    if full[: len(prompt)] != prompt or len(full) == len(prompt):
        # Templates that rewrite earlier turns (e.g. drop reasoning) are not prefix-stable: reply text plus EOS.
        reply = tok(msgs[-1]["content"], add_special_tokens=False)["input_ids"]
        full = prompt + list(reply) + ([tok.eos_token_id] if tok.eos_token_id is not None else [])
    return full, [-100] * len(prompt) + full[len(prompt):]


def microbatches(rows, budget):
    """Consecutive groups whose padded size (rows x longest) stays within the token budget."""
    out, cur, longest = [], [], 0
    for r in rows:
        n = max(longest, len(r[0]))
        if cur and n * (len(cur) + 1) > budget:
            out.append(cur)
            cur, n = [], len(r[0])
        cur.append(r)
        longest = n
    if cur:
        out.append(cur)
    return out


def apply_lora(torch, model, opts, seed):
    """A fresh LoRA per step (its A matrices are random, so seeded), merged after the step."""
    from peft import LoraConfig, get_peft_model
    torch.manual_seed(seed)
    return get_peft_model(model, LoraConfig(r=opts.lora_rank, lora_alpha=opts.lora_alpha, lora_dropout=0.0,
                                            target_modules=opts.lora_targets, bias="none"))


def make_optimizer(torch, model, lr, weight_decay):
    """AdamW; decay on matrices and embeddings only (as the project's trainer and nanoGPT)."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    rest = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=lr, betas=BETAS, eps=EPS)


def train_epoch(torch, model, batches, hp, device, opts, on_minibatch=None):
    """One optimizer step per minibatch; loss = summed token NLL / trained tokens of the minibatch."""
    opt = make_optimizer(torch, model, hp["learning_rate"], hp["weight_decay"])
    autocast = device.type == "cuda" and opts.precision in ("auto", "bf16")
    pad = 0
    model.train()
    losses, trained = [], 0
    for b, rows in enumerate(batches):
        n_tokens = sum(sum(1 for x in labels if x != -100) for _, labels in rows)
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for mb in microbatches(rows, opts.microbatch_tokens):
            width = max(len(ids) for ids, _ in mb)
            ids = torch.tensor([r[0] + [pad] * (width - len(r[0])) for r in mb], device=device)
            labels = torch.tensor([r[1] + [-100] * (width - len(r[1])) for r in mb], device=device)
            mask = torch.tensor([[1] * len(r[0]) + [0] * (width - len(r[0])) for r in mb], device=device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
                logits = model(input_ids=ids, attention_mask=mask).logits
            nll = torch.nn.functional.cross_entropy(
                logits[:, :-1].float().reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100, reduction="sum")
            (nll / max(n_tokens, 1)).backward()
            total += nll.item()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], hp["clip_norm"])
        opt.step()
        loss = total / max(n_tokens, 1)
        losses.append(loss)
        trained += n_tokens
        if on_minibatch:
            on_minibatch(b + 1, len(batches), loss, n_tokens)
    return losses, trained


def _write_folder(torch, model, base_folder, final, base_dtype, adapter=False):
    tmp = f"{final}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (model if adapter else model.to(dtype=base_dtype)).save_pretrained(tmp, safe_serialization=True)
    for name in sorted(os.listdir(base_folder)) if not adapter else []:
        src = os.path.join(base_folder, name)
        if os.path.isfile(src) and not name.endswith(WEIGHT_FILES) and not os.path.exists(os.path.join(tmp, name)):
            shutil.copyfile(src, os.path.join(tmp, name))
    try:
        os.rename(tmp, final)
    except OSError:
        if not os.path.isdir(final):
            raise
        shutil.rmtree(tmp, ignore_errors=True)  # an equal request finished first: keep its folder


def _atomic_json(path, obj):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def train_request(req, opts):
    """Runs one request (or returns the stored response of an equal earlier one)."""
    key = request_key(req)[:16]
    out_dir = req["output_dir"]
    final = os.path.join(out_dir, f"hf-step-{req['step']}-{key}")
    stored = os.path.join(out_dir, f"hf-step-{req['step']}-{key}.response.json")
    if os.path.isfile(stored) and os.path.isdir(final):
        log(f"step {req['step']}: an equal request already finished; answering its stored result")
        with open(stored) as f:
            return json.load(f)
    started = time.time()
    base_folder = resolve_base(req, opts)
    records = read_dataset(req["dataset"])
    torch, device = setup_torch(opts, req["deterministic"], req["seed"])
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()  # stderr carries this trainer's own progress lines
    model, full_folder = load_model(torch, base_folder, opts, req["seed"] * 1000003 + req["step"])
    tok = AutoTokenizer.from_pretrained(full_folder)
    if not getattr(tok, "chat_template", None):
        raise RequestError(f"base model {full_folder} has no chat template; the trainer renders records with the model's own template")
    rows = [render_record(tok, r) for r in records]
    with open(os.path.join(full_folder, "config.json")) as f:
        saved = json.load(f)  # the folder's own dtype: weights train in float32 and are saved as they came
    base_dtype = getattr(torch, saved.get("dtype") or saved.get("torch_dtype") or "float32")
    limit = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
    too_long = [i for i, r in enumerate(rows) if limit and len(r[0]) > limit]
    if too_long:
        raise RequestError(f"dataset records {too_long[:5]} are longer than the model's {limit} positions")
    model.to(device)
    hp = req["hyperparameters"]
    batches = plan_updates(records, rows, req)
    adapter = opts.lora_rank > 0 and opts.lora_output == "adapter"
    mode = f"LoRA r={opts.lora_rank} ({opts.lora_output})" if opts.lora_rank > 0 else "full fine-tune"
    log(f"step {req['step']}: {len(rows)} records, {len(batches)} minibatches of {hp['minibatch_size']} {minibatch_unit(req)}, "
        f"{mode} on {device}, base {base_folder}")

    def progress(done, total, loss, n):
        log(f"step {req['step']} minibatch {done}/{total} loss {loss:.4f} tokens {n}")

    losses, trained = train_epoch(torch, model, batches, hp, device, opts, progress)
    if opts.lora_rank > 0 and not adapter:
        model = model.merge_and_unload()  # a plain checkpoint any server loads (no adapter support needed)
    os.makedirs(out_dir, exist_ok=True)
    _write_folder(torch, model.cpu(), full_folder, final, base_dtype, adapter)
    if adapter and opts.register_lora_url:
        register_adapter(opts.register_lora_url, os.path.abspath(final))
    protocol = req["protocol"] if req["protocol"] in PROTOCOLS else PROTOCOLS[0]
    response = {
        "protocol": protocol,
        "checkpoint": {"model": os.path.abspath(final), "uri": "file://" + os.path.abspath(final)},
        "metrics": {"minibatches": len(batches), "mean_loss": sum(losses) / len(losses) if losses else None, "trained_tokens": trained},
    }
    _atomic_json(stored, response)
    log(f"step {req['step']}: wrote {final} in {time.time() - started:.1f} s")
    return response
