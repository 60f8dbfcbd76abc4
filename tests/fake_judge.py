"""A stand-in judge model behind the OpenAI chat-completions protocol, for testing the model backends over HTTP.

It reads the scoring prompt the way a judge must (the checklist, the fenced response), answers with the rule
extractor's values for tool items and a substring check for reference items, and checks its own answer against the
request's ``response_format`` schema or grammar. Faults on demand: ``fail_first`` 500s, a ``delay_s`` per call,
``garbage`` answers. A test can set ``app.state.responder`` (request body -> answer text, or None for the default
judge) to play teachers that write rubrics or judge differently per model name.

Also here: :class:`AppServer` (an ASGI app on loopback in a thread) and :class:`ServeProcess` (``genrm serve`` in its
own process), for tests over real HTTP.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from genrm.methods.rubric.answer_extraction import extract_prediction, final_answer_span
from genrm.methods.rubric.prompts import RESPONSE_CLOSE, RESPONSE_OPEN


def _user_text(messages: list[dict]) -> str:
    content = messages[-1]["content"]
    return content if isinstance(content, str) else next(p["text"] for p in content if p["type"] == "text")


def _plain(text: str) -> str:
    # What a judge constrained by the schema writes: math without backslashes, no quotes inside a string.
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text).replace("\\pi", "π")
    return re.sub(r"[\\'\"]", "", text)


def _literal(value: object) -> str:
    if isinstance(value, str):
        return repr(_plain(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(repr(_plain(v)) for v in value) + "]"
    return repr(value)


def copies_criteria(system: str) -> bool:
    """Whether the system message asks for the rlr3 answer format (each item copies its criterion)."""
    return '"criterion": "...", "rationale"' in system


def asks_for_quotes(system: str) -> bool:
    """Whether the system message asks for the evidence format (each reference item quotes the response)."""
    return '"quote" before "credit"' in system


def judge_answer(user: str, copy_criteria: bool = False, quote: bool = False) -> str:
    """The JSON a careful judge would write for this scoring prompt (items copy their criterion when asked to, and
    reference items quote the response when asked to)."""
    checklist = json.loads(user.split("# Checklist\n", 1)[1].split("\n\n# Candidate response", 1)[0])
    lines = user.split("\n")
    start = lines.index(RESPONSE_OPEN) + 1
    end = len(lines) - 1 - lines[::-1].index(RESPONSE_CLOSE)
    response = "\n".join(lines[start:end])
    span = final_answer_span(response)
    output: dict = {"thought": "checked", "essential": [], "additional": []}
    for section in ("essential", "additional"):
        for item in checklist[section]:
            if "tool" in item:
                name = item["tool"].split("(", 1)[0]
                keywords = ", ".join(f"{k}={_literal(v)}" for k, v in extract_prediction(name, span).items())
                credit: object = f"{name}({keywords})"
            else:
                credit = 1 if item["reference"].lower() in response.lower() else 0
            # the keys in the schema's order: criterion (copied), rationale, quote (evidence), credit
            written: dict = {"criterion": item["criterion"]} if copy_criteria else {}
            written["rationale"] = "read it"
            if quote and "tool" not in item:
                start = response.lower().find(item["reference"].lower())
                written["quote"] = response[start : start + len(item["reference"])] if credit else ""
            output[section].append({**written, "credit": credit})
    return json.dumps(output, ensure_ascii=False)  # a decoder writes the characters, not \u escapes


def make_app() -> FastAPI:
    app = FastAPI()
    app.state.fail_first, app.state.delay_s, app.state.garbage, app.state.requests = 0, 0.0, False, []
    app.state.responder = None

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        body = await request.json()
        app.state.requests.append(body)
        if app.state.delay_s:
            await asyncio.sleep(app.state.delay_s)
        if app.state.fail_first > 0:
            app.state.fail_first -= 1
            return JSONResponse({"error": "overloaded"}, status_code=500)
        custom = app.state.responder(body) if app.state.responder is not None else None
        if custom is not None:
            text = custom
        else:
            messages = body["messages"]
            system = str(messages[0]["content"]) if messages[0]["role"] == "system" else ""
            copy, quote = copies_criteria(system), asks_for_quotes(system)
            text = "Looks fine to me." if app.state.garbage else judge_answer(_user_text(messages), copy, quote)
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        grammar = body.get("ebnf") or (body.get("structured_outputs") or {}).get("grammar")  # SGLang's, vLLM's
        if not app.state.garbage and (custom is None or text.startswith("{")):
            # a constrained decoder could not have written otherwise
            if schema is not None:
                jsonschema.validate(json.loads(text), schema)
            if grammar is not None:
                assert _admits(grammar, text), text
        usage = {"prompt_tokens": len(_user_text(body["messages"])) // 4, "completion_tokens": len(text) // 4}
        return JSONResponse({"id": "x", "object": "chat.completion", "model": body["model"], "usage": usage,
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": text}}]})  # fmt: skip

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": "fake-judge", "object": "model"}]}

    @app.get("/health")
    async def health() -> dict:
        return {}

    return app


def _admits(grammar: str, text: str) -> bool:
    """Whether the XGrammar EBNF ``grammar`` admits ``text`` (True where XGrammar is not installed)."""
    try:
        from xgrammar.testing import _is_grammar_accept_string
    except ImportError:
        return True
    return _is_grammar_accept_string(grammar, text)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class AppServer:
    """An ASGI app served by uvicorn on loopback in a background thread, for tests over real HTTP."""

    def __init__(self, app: object) -> None:
        self.app = app
        self.port = free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> AppServer:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


class FakeJudgeServer(AppServer):
    """The fake judge on loopback (``url`` ends in ``/v1``)."""

    def __init__(self) -> None:
        super().__init__(make_app())
        self.url = f"{self.root}/v1"

    @property
    def state(self):  # noqa: ANN201 - the app's state: requests, faults, responder
        return self.app.state


class ServeProcess:
    """``genrm serve ARGS`` in its own process on a free loopback port; terminated on exit if still running."""

    def __init__(self, *args: str, startup_timeout_s: float = 120.0, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> None:  # fmt: skip
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", "genrm", "serve", "--port", str(self.port), *args]
        self.startup_timeout_s, self.cwd, self.env = startup_timeout_s, cwd, env

    def __enter__(self) -> ServeProcess:
        from serving.client import RewardClient, RewardServerError

        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        cwd=self.cwd, env=self.env)  # fmt: skip
        deadline = time.monotonic() + self.startup_timeout_s
        with RewardClient(self.url, retries=0, timeout_s=2) as probe:
            while True:
                try:
                    probe.health()
                    return self
                except RewardServerError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        self.process.kill()
                        raise RuntimeError(f"server did not start: {self.process.stdout.read()}") from None
                    time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


async def with_app(settings, run):
    """``await run(http)`` with an HTTP client of the reward server app of ``settings``, served in this process
    (ASGI, its lifespan run around the call)."""
    import httpx

    from serving.app import create_app

    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as http:
            return await run(http)
