"""The inference-server launcher: its command lines (SGLang, vLLM), the settings that pick them, start-up wait,
failure report and shutdown (with a stand-in server; tests/test_vllm_engine.py launches a real vLLM)."""

import sys
from pathlib import Path

import httpx
import pytest
from fake_judge import free_port

from genrm.engine import JudgeSpec, make_engine
from serving.launcher import EngineLauncher, LaunchError, SGLangLaunch, VLLMLaunch
from serving.settings import ServerSettings

STAND_IN = (sys.executable, str(Path(__file__).with_name("fake_sglang_server.py")))


def test_command_line():
    launch = SGLangLaunch("/models/judge", port=31000, tp_size=2, dp_size=2, mem_fraction_static=0.8,
                          api_key="k", extra_args=("--chunked-prefill-size", "4096"))  # fmt: skip
    command = launch.command()
    assert command[:3] == [sys.executable, "-m", "sglang.launch_server"]
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert flags["--model-path"] == "/models/judge" and flags["--port"] == "31000" and flags["--tp-size"] == "2"
    assert flags["--dp-size"] == "2" and "--mem-fraction-static" in command and "--enable-metrics" in command
    assert command[-2:] == ["--chunked-prefill-size", "4096"] and launch.base_url == "http://127.0.0.1:31000/v1"
    with pytest.raises(ValueError, match="tp_size"):
        SGLangLaunch("/m", tp_size=0)


def test_vllm_command_line_reads_the_grammars_it_is_sent():
    launch = VLLMLaunch("/models/judge", port=31001, served_model_name="judge", context_length=4096, dtype="float32",
                        kv_cache_gib=2, tp_size=2, mem_fraction_static=0.5)  # fmt: skip
    command = launch.command()
    assert command[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    flags = dict(zip(command[3::2], command[4::2], strict=True))
    assert flags == {"--model": "/models/judge", "--served-model-name": "judge", "--host": "127.0.0.1",
                     "--port": "31001", "--structured-outputs-config": '{"backend": "xgrammar"}',
                     "--tensor-parallel-size": "2", "--gpu-memory-utilization": "0.5", "--max-model-len": "4096",
                     "--dtype": "float32"}  # fmt: skip
    assert launch.environment() == {"VLLM_CPU_KVCACHE_SPACE": "2"}


def test_settings_launch_the_backends_engine_and_read_the_older_names(monkeypatch):
    settings = ServerSettings(backend="vllm", launch=True, model_path="/models/judge", engine_port=31002,
                              context_length=2048, dtype="float32", engine_args=["--enforce-eager"],
                              engine_command=["/opt/vllm/bin/python", "-m", "vllm.entrypoints.x"])  # fmt: skip
    launch = settings.engine_launch()
    assert isinstance(launch, VLLMLaunch) and launch.program[0] == "/opt/vllm/bin/python"
    assert (launch.port, launch.context_length, launch.dtype, launch.extra_args) == (31002, 2048, "float32",
                                                                                     ("--enforce-eager",))  # fmt: skip
    assert settings.judge == JudgeSpec("vllm", "/models/judge", ("http://127.0.0.1:31002/v1",))
    assert ServerSettings(backend="sglang", launch=True, model_path="/m").engine_launch().dtype is None  # auto
    with pytest.raises(ValueError, match="sglang_port\n  Extra inputs are not permitted"):  # one name per setting
        ServerSettings(backend="sglang", launch=True, model_path="/m", sglang_port=31003)
    monkeypatch.setenv("GENRM_SGLANG_PORT", "31004")  # not read silently as nothing
    with pytest.raises(ValueError, match="GENRM_SGLANG_PORT is no longer read: use GENRM_ENGINE_PORT"):
        ServerSettings(backend="sglang", launch=True, model_path="/m")
    monkeypatch.delenv("GENRM_SGLANG_PORT")
    with pytest.raises(ValueError, match=r"launch needs a backend that can be launched \(sglang, vllm\)"):
        ServerSettings(judge="transformers:/m", launch=True)


@pytest.mark.anyio
async def test_launch_judge_and_stop():
    launch = SGLangLaunch("judge-model", port=free_port(), program=STAND_IN, startup_timeout_s=60)
    with EngineLauncher(launch) as launched:
        process = launched.process
        backend = make_engine(JudgeSpec("sglang", launch.model_name, (launched.base_url,)))
        assert (await backend.health())[0]
        await backend.aclose()
    assert process.poll() is not None  # stopped with the block
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{launch.port}/health", timeout=1)


def test_a_server_that_dies_is_reported_with_its_log():
    launch = SGLangLaunch("missing", port=free_port(), program=STAND_IN, startup_timeout_s=60)
    with pytest.raises(LaunchError, match="exited with code 1(.|\n)*does not exist"):
        with EngineLauncher(launch):
            pass


def test_genrm_serve_launches_and_stops_sglang(tmp_path):
    import subprocess
    import time

    from serving.client import RewardClient, RewardServerError

    port, judge_port = free_port(), free_port()
    config = tmp_path / "serve.yaml"
    config.write_text(
        f"port: {port}\nbackend: sglang\nlaunch: true\nmodel_path: judge-model\nengine_port: {judge_port}\n"
        f"engine_command: [{sys.executable!r}, {STAND_IN[1]!r}]\nlog_level: warning\n"
    )
    process = subprocess.Popen([sys.executable, "-m", "genrm", "serve", "--config", str(config)])
    try:
        # the first judged request pays the server's one-time set-up (4.5 s measured in a fresh checkout): the client
        # waits for the answer, not a guess at how fast it comes
        with RewardClient(f"http://127.0.0.1:{port}", retries=0, timeout_s=120) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    health = client.health()
                    break
                except RewardServerError:
                    assert process.poll() is None and time.monotonic() < deadline, "genrm serve did not start"
                    time.sleep(0.2)
            assert health.backend == "sglang" and health.backend_reachable
            group = {"id": "g", "prompt": "Name the class of spiders.", "responses": ["Arachnids.", "Insects."],
                     "rubric": {"essential": [{"criterion": "Names the class.", "reference": "arachnid",
                                               "weight": 3}]}}  # fmt: skip
            assert client.score([group])[0].rewards == [1.0, 0.0]  # a fuzzy criterion, judged by the model
    finally:
        process.terminate()
        process.wait(timeout=60)
    with pytest.raises(httpx.TransportError):  # the launched judge went down with the server
        httpx.get(f"http://127.0.0.1:{judge_port}/health", timeout=1)
