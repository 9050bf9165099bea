# The Hugging Face reference trainer's entry point: one whale-external-trainer request on stdin (or --request),
# the response as one JSON line on stdout, progress on stderr, exit 2 when the request is at fault; with
# --port it answers POST /train over HTTP instead (one step at a time).
import argparse
import hmac
import json
import os
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# cuBLAS reads its workspace setting once, when CUDA starts; deterministic requests need this one.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from core import Options, log, train_request  # noqa: E402
from protocol import RequestError, parse_request  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description="WHALE's Hugging Face reference trainer (whale-external-trainer/1 and /2)")
    p.add_argument("--request", help="read the request from this file instead of stdin")
    p.add_argument("--port", type=int, help="serve POST /train on this port instead of reading one request")
    p.add_argument("--host", default="127.0.0.1", help="address to bind with --port")
    p.add_argument("--api-key-env", help="with --port: require `Authorization: Bearer <key>` with the key from this variable")
    p.add_argument("--device", default="auto", help="auto (a GPU when present), cpu, cuda, cuda:1, ...")
    p.add_argument("--lora-rank", type=int, default=0, help="0 = full fine-tune; otherwise a LoRA of this rank, merged into the new checkpoint")
    p.add_argument("--lora-alpha", type=float, help="LoRA alpha (default 2 x rank)")
    p.add_argument("--lora-targets", default="all-linear", help="peft target_modules (default all-linear)")
    p.add_argument("--lora-output", choices=["merged", "adapter"], default="merged",
                   help="merged: a full folder per step (any server); adapter: an adapter folder per step that the next step trains on (servers with LoRA support)")
    p.add_argument("--register-lora-url", help="with --lora-output adapter: a vLLM server to load each new adapter into (POST /v1/load_lora_adapter, named by its path)")
    p.add_argument("--threads", type=int, help="CPU threads for PyTorch (default: PyTorch's choice)")
    p.add_argument("--microbatch-tokens", type=int, default=16384, help="padded tokens per forward/backward (gradient accumulation within a minibatch)")
    p.add_argument("--precision", choices=["auto", "bf16", "fp32"], default="auto", help="auto: bf16 autocast on a GPU, fp32 on CPU")
    p.add_argument("--models-root", help="resolve relative served model names under this folder")
    return p.parse_args(argv)


def options(a):
    if a.lora_rank < 0:
        raise SystemExit("--lora-rank must be >= 0")
    if a.lora_output == "adapter" and a.lora_rank == 0:
        raise SystemExit("--lora-output adapter needs --lora-rank N (N > 0)")
    return Options(device=a.device, lora_rank=a.lora_rank, lora_alpha=a.lora_alpha, lora_targets=a.lora_targets,
                   threads=a.threads, microbatch_tokens=a.microbatch_tokens, precision=a.precision, models_root=a.models_root,
                   lora_output=a.lora_output, register_lora_url=a.register_lora_url)


def run_one(text, opts, where):
    try:
        req = json.loads(text)
    except json.JSONDecodeError as err:
        raise RequestError(f"{where} is not JSON: {err}")
    return train_request(parse_request(req), opts)


def serve(a, opts):
    key = os.environ.get(a.api_key_env) if a.api_key_env else None
    if a.api_key_env and not key:
        raise SystemExit(f"--api-key-env {a.api_key_env}: that environment variable is not set")
    lock = threading.Lock()  # one step at a time: a trainer owns the machine's accelerator

    class Handler(BaseHTTPRequestHandler):
        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def error(self, status, message, kind, code=None):
            self.reply(status, {"error": {"message": message, "type": kind, "param": None, "code": code}})

        def do_GET(self):
            if self.path == "/health":
                return self.reply(200, {"status": "ok"})
            self.error(404, "POST /train or GET /health only", "invalid_request_error", "unknown_url")

        def do_POST(self):
            if self.path != "/train":
                return self.error(404, "POST /train only", "invalid_request_error", "unknown_url")
            given = (self.headers.get("authorization") or "").removeprefix("Bearer ")
            if key and not hmac.compare_digest(given.encode(), key.encode()):
                return self.error(401, "missing or wrong bearer key", "authentication_error", "invalid_api_key")
            body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode("utf-8", "replace")
            with lock:
                try:
                    self.reply(200, run_one(body, opts, "the request body"))
                except RequestError as err:
                    self.error(400, str(err), "invalid_request_error")
                except Exception as err:  # noqa: BLE001 - a server error the caller retries
                    traceback.print_exc()
                    self.error(500, f"{type(err).__name__}: {err}", "server_error")

        def log_message(self, fmt, *args):
            log(fmt % args)

    server = ThreadingHTTPServer((a.host, a.port), Handler)
    print(f"[whale] external trainer at http://{a.host}:{server.server_address[1]}/train", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def main(argv):
    a = parse_args(argv)
    opts = options(a)
    if a.port is not None:
        import signal

        def stop(*_):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, stop)
        return serve(a, opts)
    try:
        text = open(a.request).read() if a.request else sys.stdin.read()
        response = run_one(text, opts, a.request or "stdin")
    except RequestError as err:
        log(f"rejected: {err}")
        return 2
    except OSError as err:
        if a.request and not os.path.exists(a.request):
            log(f"rejected: --request {a.request} does not exist")
            return 2
        raise err
    sys.stdout.write(json.dumps(response) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
