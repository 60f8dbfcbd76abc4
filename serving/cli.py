"""``genrm serve``: run the reward server (registered with the ``genrm`` command as a plug-in subcommand)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    """Add the ``serve`` subcommand to the ``genrm`` command's subparsers."""
    serve = sub.add_parser(
        "serve",
        help="run the reward server (FastAPI) in front of a judge backend",
        description="Run the reward server. Settings come from defaults, then --config (YAML), then GENRM_* "
        "environment variables, then these options. With no model it serves the rule backend on 127.0.0.1:8000.",
    )
    serve.add_argument("--config", metavar="YAML", help="settings file (keys: the ServerSettings field names)")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1; others need an API key)")
    serve.add_argument("--port", type=int, help="TCP port (default 8000)")
    serve.add_argument("--api-key", help="bearer token clients must send (or GENRM_API_KEY)")
    serve.add_argument("--backend", choices=["rule", "openai", "sglang"], help="judge backend (default: rule)")
    serve.add_argument(
        "--judge-url",
        action="append",
        dest="judge_urls",
        metavar="URL",
        help="OpenAI-compatible base URL of the judge, e.g. http://127.0.0.1:30000/v1 (repeat for replicas)",
    )
    serve.add_argument("--judge-model", help="model name to send to the judge endpoint")
    serve.add_argument("--exposure", choices=["minimal", "unlimited", "vlm", "no_verifier"])
    serve.add_argument("--tau", type=float, help="remapping threshold in (0, 1)")
    serve.add_argument("--record-log", metavar="PATH", help="append every scored group to this JSONL file")
    serve.add_argument("--max-concurrent-groups", type=int, help="groups judged at the same time")
    serve.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    serve.set_defaults(handler=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    import logging

    import uvicorn
    from pydantic import ValidationError

    from serving.app import create_app
    from serving.settings import ServerSettings

    try:
        settings = ServerSettings.load(
            args.config, host=args.host, port=args.port, api_key=args.api_key, backend=args.backend,
            exposure=args.exposure, tau=args.tau, record_log=args.record_log,
            max_concurrent_groups=args.max_concurrent_groups, log_level=args.log_level, judge_urls=args.judge_urls,
            judge_model=args.judge_model,
        )  # fmt: skip
    except (ValidationError, ValueError) as exc:
        print(f"genrm serve: invalid settings: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(settings)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level, access_log=False)
    return 0
