# The external-trainer protocol as the Hugging Face reference trainer reads it: request validation, the
# dataset file, and the project's seeded minibatch plan (a port of training/rsft.ts and its Rng),
# so this trainer visits the examples in the same minibatches as the project's own trainer.
import hashlib
import json
import math

PROTOCOLS = ("whale-external-trainer/1", "whale-external-trainer/2")
_U32 = 0xFFFFFFFF


class RequestError(Exception):
    """The request is at fault (exit status 2 / HTTP 400): the same request would fail the same way."""


def _need(obj, key, kind, where):
    if not isinstance(obj, dict) or key not in obj:
        raise RequestError(f"{where}.{key} is missing")
    value = obj[key]
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "num": isinstance(value, (int, float)) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "obj": isinstance(value, dict),
        "str?": value is None or isinstance(value, str),
    }[kind]
    if not ok:
        raise RequestError(f"{where}.{key} must be {kind.rstrip('?')}{' or null' if kind.endswith('?') else ''}, got {json.dumps(value)[:80]}")
    return value


def parse_request(req):
    """Checks the fields this trainer reads; returns the request (a dict) unchanged."""
    if not isinstance(req, dict):
        raise RequestError("the request must be a JSON object")
    protocol = _need(req, "protocol", "str", "request")
    if protocol not in PROTOCOLS:
        raise RequestError(f"request.protocol is {protocol!r}; this trainer speaks {', '.join(PROTOCOLS)}")
    for key, kind in (("run_id", "str"), ("step", "int"), ("seed", "int"), ("deterministic", "bool"), ("output_dir", "str")):
        _need(req, key, kind, "request")
    ds = _need(req, "dataset", "obj", "request")
    _need(ds, "path", "str", "request.dataset")
    _need(ds, "sha256", "str", "request.dataset")
    _need(ds, "records", "int", "request.dataset")
    base = _need(req, "base_checkpoint", "obj", "request")
    _need(base, "path", "str?", "request.base_checkpoint")
    _need(base, "model", "str?", "request.base_checkpoint")
    hp = _need(req, "hyperparameters", "obj", "request")
    if _need(hp, "learning_rate", "num", "request.hyperparameters") <= 0:
        raise RequestError("request.hyperparameters.learning_rate must be positive")
    if _need(hp, "minibatch_size", "int", "request.hyperparameters") < 1:
        raise RequestError("request.hyperparameters.minibatch_size must be at least 1")
    if _need(hp, "weight_decay", "num", "request.hyperparameters") < 0:
        raise RequestError("request.hyperparameters.weight_decay must be >= 0")
    if _need(hp, "clip_norm", "num", "request.hyperparameters") <= 0:
        raise RequestError("request.hyperparameters.clip_norm must be positive")
    epochs = hp.get("epochs", 1)
    if epochs != 1:
        raise RequestError(f"request.hyperparameters.epochs is {epochs}; RSFT trains one epoch per step (1)")
    minibatch_unit(req)
    return req


def request_key(req):
    """A stable hash of the request: equal requests map to the same output folder and stored response."""
    return hashlib.sha256(json.dumps(req, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def read_dataset(ds):
    try:
        with open(ds["path"], "rb") as f:
            data = f.read()
    except OSError as err:
        raise RequestError(f"cannot read dataset {ds['path']} ({err}): the trainer must see the caller's shared artifact directory")
    sha = hashlib.sha256(data).hexdigest()
    if sha != ds["sha256"]:
        raise RequestError(f"dataset {ds['path']} has sha256 {sha}, the request says {ds['sha256']}")
    records = []
    for i, line in enumerate(data.decode("utf-8").split("\n")):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise RequestError(f"dataset line {i + 1} is not JSON: {err}")
        msgs, mask = rec.get("messages"), rec.get("loss_mask")
        if not isinstance(msgs, list) or not msgs or not isinstance(mask, list) or len(mask) != len(msgs):
            raise RequestError(f"dataset line {i + 1}: needs messages (non-empty) and a loss_mask with one entry per message")
        if any(not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str) for m in msgs):
            raise RequestError(f"dataset line {i + 1}: every message needs a string role and content")
        if mask[-1] != 1 or any(v != 0 for v in mask[:-1]) or msgs[-1]["role"] != "assistant":
            raise RequestError(f"dataset line {i + 1}: the RSFT unit is one model call, so only the last message (the assistant's reply) may have loss_mask 1")
        records.append(rec)
    if len(records) != ds["records"]:
        raise RequestError(f"dataset {ds['path']} has {len(records)} records, the request says {ds['records']}")
    return records


# --- the project's seeded minibatch plan (training/rsft.ts, common/rng.ts) ---

def _imul(a, b):
    return (a * b) & _U32


def mix_seed(*parts):
    h = 0x811C9DC5
    for p in parts:
        h ^= p & _U32
        h = _imul(h, 0x01000193)
        h ^= h >> 13
    return h & _U32


class Rng:
    """mulberry32, bit for bit the project's common/rng.ts Rng (which orders the minibatches)."""

    def __init__(self, seed):
        self.state = seed & _U32

    def next(self):
        self.state = (self.state + 0x6D2B79F5) & _U32
        t = self.state
        t = _imul(t ^ (t >> 15), t | 1)
        t ^= (t + _imul(t ^ (t >> 7), t | 61)) & _U32
        return ((t ^ (t >> 14)) & _U32) / 4294967296


def seeded_permutation(n, seed, epoch):
    order = list(range(n))
    rng = Rng(mix_seed(seed, epoch, 0xE90C))
    for i in range(n - 1, 0, -1):
        j = math.floor(rng.next() * (i + 1))
        order[i], order[j] = order[j], order[i]
    return order


def plan_minibatches(items, size, seed, step):
    """A seeded shuffle by (seed, step), then consecutive slices of `size` (the last may be short)."""
    order = seeded_permutation(len(items), seed, mix_seed(step, 0x5F7))
    return [[items[k] for k in order[i:i + size]] for i in range(0, len(order), size)]


def trajectory_of(rec):
    """The record's trajectory: `trajectory_id` (protocol 2), else its id before the last '/' (`<trajectory>/<call>`)."""
    return rec.get("trajectory_id") or rec["id"].rsplit("/", 1)[0]


def minibatch_unit(req):
    """What minibatch_size counts: protocol 2 says (hyperparameters.minibatch_unit); protocol 1 means calls."""
    unit = req["hyperparameters"].get("minibatch_unit")
    if unit is None:
        if req["protocol"] != PROTOCOLS[0]:
            raise RequestError(f"{req['protocol']} needs hyperparameters.minibatch_unit ('trajectories' or 'calls')")
        return "calls"
    if unit not in ("calls", "trajectories"):
        raise RequestError(f"hyperparameters.minibatch_unit is {unit!r}; use 'calls' or 'trajectories'")
    if unit == "trajectories" and req["protocol"] == PROTOCOLS[0]:
        raise RequestError(f"{PROTOCOLS[0]} minibatches count model calls; send {PROTOCOLS[1]} for minibatch_unit 'trajectories'")
    return unit


def plan_updates(records, rows, req):
    """Rows per optimizer update: `minibatch_size` model calls, or every call of `minibatch_size` trajectories."""
    hp = req["hyperparameters"]
    if minibatch_unit(req) == "calls":
        return plan_minibatches(rows, hp["minibatch_size"], req["seed"], req["step"])
    groups = {}
    for rec, row in zip(records, rows):
        groups.setdefault(trajectory_of(rec), []).append(row)
    planned = plan_minibatches(list(groups.values()), hp["minibatch_size"], req["seed"], req["step"])
    return [[row for group in update for row in group] for update in planned]
