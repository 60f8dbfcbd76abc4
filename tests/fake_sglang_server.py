"""A stand-in for ``python -m sglang.launch_server``: takes SGLang's flags and serves the fake judge (tests only)."""

import argparse
import sys

import uvicorn
from fake_judge import make_app

parser = argparse.ArgumentParser()
parser.add_argument("--model-path", required=True)
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, required=True)
args, _ = parser.parse_known_args()
if args.model_path == "missing":
    print("ValueError: model path 'missing' does not exist", file=sys.stderr)
    sys.exit(1)
print(f"serving {args.model_path} on {args.port}", flush=True)
uvicorn.run(make_app(), host=args.host, port=args.port, log_level="warning")
