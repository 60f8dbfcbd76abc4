"""The server process's connections and shutdown: a request head that never completes is cut off, and SIGTERM is
honoured within the shutdown time even while a judge call hangs."""

import signal
import socket
import threading
import time

import httpx
import pytest
from fake_judge import FakeJudgeServer, ServeProcess
from test_serving_app import GROUP

pytestmark = pytest.mark.slow


def _closed_within(sock: socket.socket, seconds: float, drip: bytes = b"") -> bool:
    """Whether the server closes ``sock`` within ``seconds`` while ``drip`` is sent a byte at a time."""
    end = time.monotonic() + seconds
    sock.settimeout(0.2)
    for byte in [drip[i : i + 1] for i in range(len(drip))] + [b""] * 10_000:
        if time.monotonic() > end:
            return False
        try:
            if byte:
                sock.sendall(byte)
            if sock.recv(65_536) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:  # reset by the server
            return True
    return False


def test_a_head_that_never_completes_is_cut_off_and_whole_requests_are_served():
    with ServeProcess("--header-timeout-s", "0.5", "--log-level", "warning") as served:
        silent = socket.create_connection(("127.0.0.1", served.port))
        dripping = socket.create_connection(("127.0.0.1", served.port))
        with silent, dripping:
            assert _closed_within(silent, 15.0)
            assert _closed_within(dripping, 15.0, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000)
        with httpx.Client(base_url=served.url, timeout=30) as http:  # keep-alive: several requests, one connection
            for _ in range(3):
                assert http.post("/v1/score", json={"groups": [GROUP]}).status_code == 200
                time.sleep(0.3)


def test_sigterm_is_honoured_within_the_shutdown_time_while_a_judge_call_hangs():
    with FakeJudgeServer() as judge:
        judge.state.delay_s = 60.0
        served = ServeProcess("--judge", f"openai:fake-judge@{judge.url}", "--shutdown-timeout-s", "0.2",
                              "--log-level", "warning")  # fmt: skip
        with served:
            outcome = {}

            def post() -> None:
                try:
                    outcome["status"] = httpx.post(served.url + "/v1/score", json={"groups": [GROUP]},
                                                   timeout=120).status_code  # fmt: skip
                except httpx.HTTPError as exc:
                    outcome["error"] = type(exc).__name__

            client = threading.Thread(target=post)
            client.start()
            deadline = time.monotonic() + 60
            while not judge.state.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert judge.state.requests, "the judge was never called"
            start = time.monotonic()
            served.process.send_signal(signal.SIGTERM)
            served.process.wait(timeout=30)
            took = time.monotonic() - start
            client.join(timeout=30)
    assert took < 10.0, f"SIGTERM took {took:.1f} s with a judge call of 60 s under way"
    assert "status" not in outcome or outcome["status"] >= 500  # the cut request is never answered as scored
