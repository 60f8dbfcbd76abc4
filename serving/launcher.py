"""Start an inference server for the judge (SGLang, vLLM), wait until it is healthy, and stop it (and its workers)
on exit.

    with SGLangLauncher(SGLangLaunch(model_path="/models/judge", tp_size=2)) as launched:
        launched.base_url        # http://127.0.0.1:30000/v1, for the sglang judge
    with EngineLauncher(VLLMLaunch(model_path="runs/judge", port=8001)) as launched:
        launched.base_url        # http://127.0.0.1:8001/v1, for the vllm judge

SGLang's command is ``python -m sglang.launch_server`` with the flags below (checked against SGLang's own argument
parser by the contract test); vLLM's is ``python -m vllm.entrypoints.openai.api_server`` (its ``vllm`` command fails
on its own package name in the CPU build), with XGrammar as its structured-output backend: the judge is sent its
answers' grammar with each request, as XGrammar's EBNF (:mod:`genrm.engine.answer_grammar`), so no flag of the
engine's decides what white space or separators the judge may write. :data:`LAUNCHES` gives the launch of each
backend that can be launched. The server runs in its own process group, so stopping it also
stops its scheduler and engine processes: SIGTERM, then SIGKILL after ``stop_timeout_s``.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import httpx

logger = logging.getLogger("genrm.serving.launcher")


class LaunchError(RuntimeError):
    """The launched server exited or did not become healthy in time; the message ends with its last log lines."""


class _Served:
    """What every launch answers alike: the name requests send and the base URL (its fields give them)."""

    model_path: str
    port: int
    served_model_name: str | None

    @property
    def model_name(self) -> str:
        """The model name judge requests must send."""
        return self.served_model_name or self.model_path

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL of the launched server."""
        return f"http://127.0.0.1:{self.port}/v1"


@dataclass(frozen=True)
class SGLangLaunch(_Served):
    """How to start SGLang for the judge.

    Attributes:
        model_path: local checkpoint directory or hub id of the judge model.
        port: port of the SGLang server (loopback only).
        tp_size, dp_size: tensor- and data-parallel sizes (GPUs = tp_size x dp_size).
        mem_fraction_static: share of GPU memory for weights and KV cache (SGLang's default when None).
        context_length: maximum context in tokens (the model's when None).
        dtype: weight dtype (SGLang's ``auto`` when None).
        api_key: key SGLang requires from its clients (none when None).
        served_model_name: the name requests use (defaults to ``model_path``).
        extra_args: further SGLang flags, passed as given.
        startup_timeout_s: how long to wait for ``/health`` (loading a large model takes minutes).
        program: the command before the flags (tests substitute a stand-in server).
    """

    model_path: str
    port: int = 30000
    tp_size: int = 1
    dp_size: int = 1
    mem_fraction_static: float | None = None
    context_length: int | None = None
    dtype: str | None = None
    api_key: str | None = None
    served_model_name: str | None = None
    extra_args: tuple[str, ...] = ()
    startup_timeout_s: float = 1800.0
    stop_timeout_s: float = 30.0
    program: tuple[str, ...] = field(default_factory=lambda: (sys.executable, "-m", "sglang.launch_server"))

    def __post_init__(self) -> None:
        _check_sizes(self)

    engine = "SGLang"
    backend = "sglang"

    def environment(self) -> dict[str, str]:
        """Variables the server is started with, besides this process's."""
        return {}

    def command(self) -> list[str]:
        """The full command line."""
        flags = ["--model-path", self.model_path, "--host", "127.0.0.1", "--port", str(self.port),
                 "--tp-size", str(self.tp_size), "--dp-size", str(self.dp_size), "--enable-metrics",
                 "--served-model-name", self.model_name]  # fmt: skip
        if self.mem_fraction_static is not None:
            flags += ["--mem-fraction-static", str(self.mem_fraction_static)]
        if self.context_length is not None:
            flags += ["--context-length", str(self.context_length)]
        if self.dtype is not None:
            flags += ["--dtype", self.dtype]
        if self.api_key is not None:
            flags += ["--api-key", self.api_key]
        return [*self.program, *flags, *self.extra_args]


def _check_sizes(launch: SGLangLaunch | VLLMLaunch) -> None:
    if launch.tp_size < 1 or launch.dp_size < 1:
        raise ValueError("tp_size and dp_size must be at least 1")
    if launch.mem_fraction_static is not None and not 0.0 < launch.mem_fraction_static < 1.0:
        raise ValueError("mem_fraction_static must be in (0, 1)")


_VLLM_SERVER = "vllm.entrypoints.openai.api_server"
# the requests' grammars are XGrammar's EBNF: no other structured-output backend of vLLM's reads them
_VLLM_STRUCTURED_OUTPUTS = json.dumps({"backend": "xgrammar"})


@dataclass(frozen=True)
class VLLMLaunch(_Served):
    """How to start vLLM for the judge (fields as :class:`SGLangLaunch`'s: ``tp_size``, ``dp_size`` and
    ``mem_fraction_static`` are vLLM's tensor- and data-parallel sizes and GPU memory utilisation; ``dtype`` and
    ``kv_cache_gib`` matter on a CPU, where vLLM wants ``float32`` and a KV cache size, ``VLLM_CPU_KVCACHE_SPACE``,
    GiB)."""

    model_path: str
    port: int = 8001
    tp_size: int = 1
    dp_size: int = 1
    mem_fraction_static: float | None = None
    context_length: int | None = None
    api_key: str | None = None
    served_model_name: str | None = None
    dtype: str | None = None
    kv_cache_gib: int | None = None
    extra_args: tuple[str, ...] = ()
    startup_timeout_s: float = 1800.0
    stop_timeout_s: float = 30.0
    program: tuple[str, ...] = field(default_factory=lambda: (sys.executable, "-m", _VLLM_SERVER))

    def __post_init__(self) -> None:
        _check_sizes(self)

    engine = "vLLM"
    backend = "vllm"

    def environment(self) -> dict[str, str]:
        """Variables the server is started with, besides this process's."""
        return {"VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib)} if self.kv_cache_gib is not None else {}

    def command(self) -> list[str]:
        """The full command line."""
        flags = ["--model", self.model_path, "--served-model-name", self.model_name, "--host", "127.0.0.1",
                 "--port", str(self.port), "--structured-outputs-config", _VLLM_STRUCTURED_OUTPUTS]  # fmt: skip
        if self.tp_size > 1:
            flags += ["--tensor-parallel-size", str(self.tp_size)]
        if self.dp_size > 1:
            flags += ["--data-parallel-size", str(self.dp_size)]
        if self.mem_fraction_static is not None:
            flags += ["--gpu-memory-utilization", str(self.mem_fraction_static)]
        if self.context_length is not None:
            flags += ["--max-model-len", str(self.context_length)]
        if self.dtype is not None:
            flags += ["--dtype", self.dtype]
        if self.api_key is not None:
            flags += ["--api-key", self.api_key]
        return [*self.program, *flags, *self.extra_args]


class EngineLauncher:
    """Context manager that runs one inference server (a :class:`SGLangLaunch` or :class:`VLLMLaunch`) for the
    duration of a ``with`` block."""

    def __init__(self, launch: SGLangLaunch | VLLMLaunch) -> None:
        self.launch = launch
        self.process: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``…/v1``)."""
        return self.launch.base_url

    def _tail(self, lines: int = 30) -> str:
        self._log.flush()
        self._log.seek(0)
        return "".join(self._log.readlines()[-lines:])

    def start(self) -> None:
        """Start the server and wait for ``/health``; raises LaunchError (with its log tail) when it fails."""
        engine = self.launch.engine
        logger.info("starting %s: %s", engine, " ".join(self.launch.command()))
        self.process = subprocess.Popen(
            self.launch.command(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **self.launch.environment()},
        )
        headers = {"Authorization": f"Bearer {self.launch.api_key}"} if self.launch.api_key else {}
        deadline = time.monotonic() + self.launch.startup_timeout_s
        health = f"http://127.0.0.1:{self.launch.port}/health"
        while True:
            if self.process.poll() is not None:
                raise LaunchError(f"{engine} exited with code {self.process.returncode}:\n{self._tail()}")
            try:
                if httpx.get(health, headers=headers, timeout=2.0).status_code == 200:
                    logger.info("%s is healthy at %s", engine, self.base_url)
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise LaunchError(f"{engine} not healthy after {self.launch.startup_timeout_s:.0f} s:\n{self._tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        """Stop the server's whole process group: SIGTERM, then SIGKILL after ``stop_timeout_s``."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        group = os.getpgid(process.pid)
        os.killpg(group, signal.SIGTERM)
        try:
            process.wait(timeout=self.launch.stop_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(group, signal.SIGKILL)
            process.wait(timeout=10)

    def __enter__(self) -> EngineLauncher:
        try:
            self.start()
        except BaseException:  # an interrupt while it starts: the server must not outlive us
            self.stop()
            self._log.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._log.close()


#: The launch of each backend that can be launched, by the backend's name.
LAUNCHES: dict[str, type[SGLangLaunch] | type[VLLMLaunch]] = {
    launch.backend: launch for launch in (SGLangLaunch, VLLMLaunch)
}

SGLangLauncher = EngineLauncher  # the name it had when SGLang was the only engine launched
