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


def _answer_while_dripping(sock: socket.socket, head: bytes, seconds: float) -> bytes:
    """What the server sends on ``sock`` within ``seconds`` while the body after ``head`` drips a byte every 0.2 s,
    up to the connection's close."""
    sock.sendall(head)
    sock.settimeout(0.2)
    answer, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            sock.sendall(b" ")
            chunk = sock.recv(65_536)
        except TimeoutError:
            continue
        except OSError:  # reset by the server once it has closed
            break
        if not chunk:
            break
        answer += chunk
    return answer


def test_a_body_that_drips_is_answered_408_and_its_connection_closed_within_its_time():
    import json

    declared = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    chunked = (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n")  # fmt: skip
    with ServeProcess("--body-timeout-s", "1", "--header-timeout-s", "5", "--log-level", "warning") as served:
        answers = []
        for head in (declared, chunked):
            with socket.create_connection(("127.0.0.1", served.port)) as sock:
                started = time.monotonic()
                answers.append((_answer_while_dripping(sock, head, 20.0), time.monotonic() - started))
        with httpx.Client(base_url=served.url, timeout=30) as http:  # a body sent at once is served as ever
            assert http.post("/v1/score", json={"groups": [GROUP]}).status_code == 200
    for answer, took in answers:
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), answer[:200]
        detail = json.loads(body[: body.rindex(b"}") + 1])["detail"][0]
        assert detail["type"] == "body_timeout" and "body_timeout_s" in detail["msg"]
        assert took < 10.0  # about 1 s (plus 1 ms for the declared 1,000 bytes); the drip would go on for 20 s


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
    assert outcome.get("status") == 503  # the cut request is told the server is stopping, never answered as scored


def test_sigterm_with_busy_scoring_workers_answers_503_and_logs_no_traceback(tmp_path):
    import json

    from slow_expressions import slow_sum
    from test_score_workers import LARGE

    slow = dict(LARGE, id="slow", responses=[f"\\boxed{{{slow_sum(k)}}} " + "and so on " * 250 for k in range(4)])
    log = tmp_path / "log.jsonl"
    served = ServeProcess("--score-workers", "1", "--verifier-deadline-s", "10", "--shutdown-timeout-s", "0.2",
                          "--record-log", str(log), "--log-level", "info")  # fmt: skip
    with served:
        outcome = {}

        def post() -> None:
            answer = httpx.post(served.url + "/v1/score", json={"groups": [slow]}, timeout=120)
            outcome["status"], outcome["body"] = answer.status_code, answer.json()

        client = threading.Thread(target=post)
        client.start()
        time.sleep(3.0)  # the worker is scoring: its checks take 40 s
        served.process.send_signal(signal.SIGTERM)
        served.process.wait(timeout=30)
        client.join(timeout=30)
        printed = served.process.stdout.read()
    assert outcome["status"] == 503, outcome
    assert outcome["body"]["detail"][0]["type"] == "shutdown"
    assert "Traceback" not in printed and "CancelledError" not in printed, printed[-3000:]
    assert not log.exists() or log.read_text() == ""  # nothing of the cut request is logged
    json.dumps(outcome)
