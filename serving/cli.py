"""``genrm serve``: run the reward server (registered with the ``genrm`` command as a plug-in subcommand)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from typing import Any

#: The judge's options as ``genrm score``, ``eval`` and ``audit run`` spell them (genrm.cli.judging), taken here too.
_JUDGE_SPELLINGS = {"judge_urls": ["--judge-url"], "model_path": ["--model"], "judge_max_tokens": ["--max-tokens"]}
_SWITCH_INTERVAL_S = 0.001
#: Settings taken from the environment or the YAML file only: a secret on a command line is visible to every user.
_NOT_OPTIONS = ("judge_api_key",)


def register(sub: Any) -> None:
    """Add the ``serve`` subcommand to the ``genrm`` command's subparsers."""
    from genrm.cli.settings import add_settings_options
    from serving.settings import ServerSettings

    serve = sub.add_parser(
        "serve",
        help="run the reward server (FastAPI) in front of a judge backend",
        description="Run the reward server. Settings come from defaults, then --config (YAML), then GENRM_* "
        "environment variables, then these options. With no model it serves the rule backend on 127.0.0.1:8000.",
    )
    serve.add_argument("--config", metavar="YAML", help="settings file (keys: the ServerSettings field names)")
    # One option per field of ServerSettings (its description as help).
    add_settings_options(serve, ServerSettings, aliases=_JUDGE_SPELLINGS, skip=_NOT_OPTIONS)
    serve.set_defaults(handler=_cmd_serve)


def _address_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on ``host:port`` (in use, not an address of this machine), or None."""
    import socket

    if port == 0:
        return None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        return f"cannot listen on {host}:{port}: {exc}"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a socket in TIME_WAIT is free
        try:
            probe.bind(address)
        except OSError as exc:
            return f"cannot listen on {host}:{port}: {exc.strerror or exc} (is another server running there? --port)"
    return None


def _cmd_serve(args: argparse.Namespace) -> int:
    import logging

    import uvicorn
    from pydantic import ValidationError

    from genrm.cli.judging import checked_checkpoint
    from genrm.cli.settings import given_settings
    from serving.app import create_app
    from serving.settings import ServerSettings

    try:
        settings = ServerSettings.load(args.config, **given_settings(args, list(ServerSettings.model_fields)))
    except (ValidationError, ValueError) as exc:
        print(f"genrm serve: invalid settings: {exc}", file=sys.stderr)
        return 2
    try:
        checked_checkpoint(settings.judge)  # before the judge is loaded: a mistyped path is one line
    except ValueError as exc:
        print(f"genrm serve: cannot make the judge: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    problem = _address_problem(settings.host, settings.port)
    if problem:  # found before the judge is loaded or launched, not after uvicorn says it started
        print(f"genrm serve: {problem}", file=sys.stderr)
        return 1
    with contextlib.ExitStack() as stack:
        if settings.launch:
            from serving.launcher import EngineLauncher, LaunchError

            # SIGTERM (and uvicorn re-raising it after its graceful shutdown) becomes an exit that unwinds this block,
            # so the launched inference server (in a process group of its own) is stopped too, even while it starts
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
            try:
                stack.enter_context(EngineLauncher(settings.engine_launch()))
            except LaunchError as exc:
                print(f"genrm serve: {exc}", file=sys.stderr)
                return 1
        try:
            app = create_app(settings)
        except ValueError as exc:  # a backend that cannot serve these settings (a text-only judge for vlm, ...)
            print(f"genrm serve: {exc}", file=sys.stderr)
            return 2
        from serving.defences.http_protocol import head_timeout_protocol

        if app.state.server.score_workers is not None:  # ready before the first large request, not started by it
            app.state.server.score_workers.start_in_background()

        # CPU work runs in threads, one per request (serving.state); the event loop and a cheap request's thread
        # wait for the interpreter behind them, 5 ms each by default: 1 ms turns make a cheap request under load
        # several times faster, for a few context switches more per second
        sys.setswitchinterval(_SWITCH_INTERVAL_S)

        uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level, access_log=False,
                    http=head_timeout_protocol(settings.header_timeout_s), timeout_keep_alive=settings.idle_timeout_s,
                    timeout_graceful_shutdown=settings.shutdown_timeout_s)  # type: ignore[arg-type]  # fmt: skip
    return 0
