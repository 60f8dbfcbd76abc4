"""``genrm serve``: run the reward server (registered with the ``genrm`` command as a plug-in subcommand)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from typing import Any


def register(sub: Any) -> None:
    """Add the ``serve`` subcommand to the ``genrm`` command's subparsers."""
    from genrm.choices import DEVICES, EXPOSURES, JUDGE_BACKENDS

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
    serve.add_argument("--backend", choices=JUDGE_BACKENDS, help="judge backend (default: rule)")
    serve.add_argument(
        "--judge-url",
        action="append",
        dest="judge_urls",
        metavar="URL",
        help="OpenAI-compatible base URL of the judge, e.g. http://127.0.0.1:30000/v1 (repeat for replicas)",
    )
    serve.add_argument("--judge-model", help="model name to send to the judge endpoint")
    serve.add_argument(
        "--launch",
        action="store_true",
        default=None,
        help="start an SGLang server for --model (needs --backend sglang and a GPU); stopped on exit",
    )
    serve.add_argument(
        "--model",
        dest="model_path",
        help="judge checkpoint (directory or hub id) for --launch or --backend transformers",
    )
    serve.add_argument("--device", choices=DEVICES, help="transformers backend: where the model runs")
    serve.add_argument("--max-batch-size", type=int, help="transformers backend: most prompts in one batch")
    serve.add_argument(
        "--image-dir", metavar="DIR", help="transformers backend, vision-language judge: the folder of image files"
    )
    serve.add_argument("--max-tokens", type=int, dest="judge_max_tokens", help="output token budget per answer")
    serve.add_argument("--tp-size", type=int, help="tensor-parallel size of the launched SGLang server")
    serve.add_argument("--dp-size", type=int, help="data-parallel size of the launched SGLang server")
    serve.add_argument("--mem-fraction", type=float, dest="mem_fraction_static", help="SGLang GPU memory share")
    serve.add_argument("--sglang-port", type=int, help="port of the launched SGLang server (default 30000)")
    serve.add_argument("--exposure", choices=EXPOSURES)
    serve.add_argument("--tau", type=float, help="remapping threshold in (0, 1)")
    serve.add_argument("--record-log", metavar="PATH", help="append every scored group to this JSONL file")
    serve.add_argument("--max-concurrent-groups", type=int, help="groups judged at the same time")
    serve.add_argument(
        "--special-token",
        action="append",
        dest="special_tokens",
        metavar="TEXT",
        help="/get_reward: a special-token text of the policy to cut from the end of responses (repeat)",
    )
    serve.add_argument(
        "--group-size",
        type=int,
        help="/get_reward: gather this many responses of an instance across requests into one group (OpenRLHF "
        ">= 0.10: its n_samples_per_prompt)",
    )
    serve.add_argument(
        "--group-wait", type=float, dest="group_wait_s", help="/get_reward: longest wait for a group, s (default 30)"
    )
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
            judge_model=args.judge_model, launch=args.launch, model_path=args.model_path, tp_size=args.tp_size,
            dp_size=args.dp_size, mem_fraction_static=args.mem_fraction_static, sglang_port=args.sglang_port,
            device=args.device, max_batch_size=args.max_batch_size, judge_max_tokens=args.judge_max_tokens,
            image_dir=args.image_dir, special_tokens=args.special_tokens, group_size=args.group_size,
            group_wait_s=args.group_wait_s,
        )  # fmt: skip
    except (ValidationError, ValueError) as exc:
        print(f"genrm serve: invalid settings: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with contextlib.ExitStack() as stack:
        if settings.launch:
            from serving.launcher import LaunchError, SGLangLaunch, SGLangLauncher

            launch = SGLangLaunch(
                str(settings.model_path), port=settings.sglang_port, tp_size=settings.tp_size,
                dp_size=settings.dp_size, mem_fraction_static=settings.mem_fraction_static,
                served_model_name=settings.judge_model, extra_args=tuple(settings.sglang_args),
                **({"program": tuple(settings.sglang_command)} if settings.sglang_command else {}),
            )  # fmt: skip
            try:
                stack.enter_context(SGLangLauncher(launch))
            except LaunchError as exc:
                print(f"genrm serve: {exc}", file=sys.stderr)
                return 1
            # uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown; turn that into an exit that unwinds this
            # block, so the launched SGLang server is stopped too.
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
        try:
            app = create_app(settings)
        except ValueError as exc:  # a backend that cannot serve these settings (a text-only judge for vlm, ...)
            print(f"genrm serve: {exc}", file=sys.stderr)
            return 2
        uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level, access_log=False)
    return 0
