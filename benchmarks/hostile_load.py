"""One client cannot stall or exhaust the reward server: a victim's latency under hostile load, memory, answer size.

    python benchmarks/hostile_load.py [--victim-requests 60] [--hostile-clients 6] [--json FILE]

A ``genrm serve`` process (rule judge, a record log, image URLs allowed from a loopback host) is measured phase by
phase. In each phase a victim (a process of its own, as another client would be) sends cheap requests one at a time,
alternating ``/v1/score`` (one group of three short responses) and ``/health``, while ``--hostile-clients`` clients
send one hostile pattern as fast as the server answers them:

- ``none``: no hostile load (the victim's baseline);
- ``quadratic_text``: groups of 64 responses of 100,000 characters of ``\\boxed{``, ``\\(`` and ``<think>`` (the scans
  that were quadratic took 17-60 s each);
- ``image_bombs``: a 2.5 kB lossless WebP of 8000 x 8000 pixels, a JPEG of 5,000 scans, a PNG of 8192 x 8192 pixels;
- ``drip_urls``: image URLs whose host sends one byte a second;
- ``amplifying``: 64 one-word responses against 128 criteria of 2,000 characters, five groups a request (records grow
  as responses x criteria);
- ``large_bodies``: 8 MB requests of 80 groups of 64 responses.

For each phase: the victim's p50 and p99 for each endpoint, the hostile requests answered and their statuses, the
server's peak resident memory (the process, and with its worker processes), and the largest answer-to-request ratio
seen. At the end, SIGTERM is sent while the last hostile load runs, and the time to exit is reported.

Goals on a 2-core machine: the victim's p99 under every hostile load within 1 s and within 5x its no-load p99; peak
memory of the server process under 1.5 GB; answers at most 10x their request; SIGTERM within 2 s.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import multiprocessing
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from benchmarks.loopback import free_port, start_server  # noqa: E402

VICTIM = {
    "id": "victim", "prompt": "What is 6 times 7?",
    "rubric": {"essential": [{"criterion": "Gives the product.", "reference": "text_verify(target='42')",
                              "weight": 3}]},
    "responses": ["\\boxed{42}", "\\boxed{41}", "The product is 42."],
}  # fmt: skip


def _rubric(criteria: int, text: int) -> dict:
    items = [{"criterion": f"Criterion {i}. " + "x" * text, "reference": "text_verify(target='yes')", "weight": 1}
             for i in range(criteria)]  # fmt: skip
    return {"essential": items[:64], "additional": items[64:]}


def _group(name: str, responses: list[str], image: str | None = None, rubric: dict | None = None) -> dict:
    group = {"id": name, "prompt": "Answer.", "rubric": rubric or _rubric(2, 10), "responses": responses}
    if image is not None:
        group["image"] = image
    return group


def _body(*groups: dict) -> bytes:
    return json.dumps({"groups": list(groups)}).encode()


def _image_bombs() -> list[bytes]:
    from PIL import Image

    def encoded(image: Image.Image, kind: str, **options: object) -> bytes:
        buffer = io.BytesIO()
        image.save(buffer, kind, **options)
        return buffer.getvalue()

    def uri(data: bytes, kind: str) -> str:
        return f"data:image/{kind};base64," + base64.b64encode(data).decode()

    webp = encoded(Image.new("RGB", (8000, 8000), "white"), "WEBP", lossless=True)
    png = encoded(Image.new("L", (8192, 8192), 255), "PNG")
    small = encoded(Image.effect_noise((256, 256), 64).convert("RGB"), "JPEG", progressive=True)
    last, end = small.rindex(b"\xff\xda"), small.rindex(b"\xff\xd9")
    scans = small[:last] + small[last:end] * 5_000 + small[end:]
    return [_body(_group(f"bomb-{kind}", ["\\boxed{yes}"], uri(data, kind)))
            for data, kind in ((webp, "webp"), (scans, "jpeg"), (png, "png"))]  # fmt: skip


def _patterns(drip_url: str) -> dict[str, list[bytes]]:
    long = 100_000
    text = [_body(_group("quadratic", [("\\boxed{" * long)[:long], ("\\(" * long)[:long], ("<think>" * long)[:long],
                                       "\\boxed{yes}"] * 16))]  # fmt: skip
    amplifying = [_body(*(_group(f"amp-{k}", ["yes", "no"] * 32, rubric=_rubric(128, 1_900)) for k in range(5)))]
    large = [_body(*(_group(f"large-{k}", ["Final answer: yes. " * 80] * 64) for k in range(80)))]
    drips = [_body(_group("drip", ["\\boxed{yes}"], f"{drip_url}/{k}.png")) for k in range(64)]
    return {"quadratic_text": text, "image_bombs": _image_bombs(), "drip_urls": drips, "amplifying": amplifying,
            "large_bodies": large}  # fmt: skip


class DripServer:
    """An HTTP server on loopback that answers 200 and then sends one byte a second, for ever."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.recv(65_536)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 100000\r\n\r\n")
                while not self.stop.is_set():
                    connection.sendall(b"\x89")
                    time.sleep(1.0)
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.socket.close()


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        children = parents.get(stack.pop(), [])
        found += children
        stack += children
    return found


class MemoryWatch:
    """Samples the resident memory of a process, alone and with its descendants, every 50 ms; keeps the peaks."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.peak_tree = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            own = _rss(self.pid)
            self.peak = max(self.peak, own)
            self.peak_tree = max(self.peak_tree, own + sum(_rss(child) for child in _descendants(self.pid)))

    def reset(self) -> None:
        """Start new peaks."""
        self.peak = self.peak_tree = 0

    def close(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()


class Hostile:
    """``clients`` threads that each post the bodies in turn to ``/v1/score`` until stopped."""

    def __init__(self, url: str, bodies: list[bytes], clients: int) -> None:
        self.statuses: Counter[str] = Counter()
        self.ratio = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(url, bodies, k), daemon=True)
                         for k in range(clients)]  # fmt: skip
        for thread in self._threads:
            thread.start()

    def _run(self, url: str, bodies: list[bytes], offset: int) -> None:
        headers = {"content-type": "application/json"}
        with httpx.Client(base_url=url, timeout=120) as http:
            k = offset
            while not self._stop.is_set():
                body = bodies[k % len(bodies)]
                k += 1
                try:
                    answer = http.post("/v1/score", content=body, headers=headers)
                    status, size = str(answer.status_code), len(answer.content)
                except httpx.HTTPError as exc:
                    status, size = type(exc).__name__, 0
                with self._lock:
                    self.statuses[status] += 1
                    self.ratio = max(self.ratio, size / len(body))

    def stop(self, wait_s: float = 0.0) -> None:
        """Stop sending; wait up to ``wait_s`` for the requests under way to be answered."""
        self._stop.set()
        end = time.monotonic() + wait_s
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))


def _victim(url: str, requests: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"score": [], "health": []}
    with httpx.Client(base_url=url, timeout=120) as http:
        for k in range(requests):
            start = time.perf_counter()
            if k % 2 == 0:
                answer = http.post("/v1/score", json={"groups": [VICTIM]})
                assert answer.status_code == 200 and answer.json()["groups"][0]["rewards"] == [1.0, 0.0, 0.0], answer
                times["score"].append(time.perf_counter() - start)
            else:
                assert http.get("/health").status_code == 200
                times["health"].append(time.perf_counter() - start)
    return times


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    """Run the phases; print the table and one summary line. Exit 0 when every goal is met, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--victim-requests", type=int, default=60, help="victim requests per phase (60)")
    parser.add_argument("--hostile-clients", type=int, default=6, help="hostile clients per phase (6)")
    parser.add_argument("--warm-s", type=float, default=2.0, help="seconds of hostile load before the victim starts")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    drip = DripServer()
    patterns = _patterns(drip.url)
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "genrm", "serve", "--port", str(port), "--log-level", "error",
                   "--record-log", str(Path(folder) / "records.jsonl"), "--image-url-hosts", "127.0.0.1",
                   "--image-private-addresses", "--image-fetch-timeout-s", "2"]  # fmt: skip
        process, url = start_server(command, port, None, "reward")
        watch = MemoryWatch(process.pid)
        victims = multiprocessing.get_context("spawn")
        rows, hostile = [], None
        try:
            for name in ["none", *patterns]:
                watch.reset()
                hostile = Hostile(url, patterns[name], args.hostile_clients) if name != "none" else None
                time.sleep(args.warm_s if hostile else 0.0)
                with victims.Pool(1) as pool:  # another client is another process: it shares no GIL with these
                    times = pool.apply(_victim, (url, args.victim_requests))
                if hostile is not None and name != list(patterns)[-1]:
                    hostile.stop(wait_s=300.0)  # the next phase starts on an idle server
                rows.append({
                    "pattern": name,
                    **{f"{what}_{q}": _quantile(times[what], level) for what in times
                       for q, level in (("p50", 0.5), ("p99", 0.99))},
                    "hostile": dict(hostile.statuses) if hostile else {},
                    "answer_ratio": hostile.ratio if hostile else 0.0,
                    "peak_rss": watch.peak, "peak_rss_tree": watch.peak_tree,
                })  # fmt: skip
                print(f"{name}: done", file=sys.stderr, flush=True)
            start = time.monotonic()
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
            sigterm_s = time.monotonic() - start
        finally:
            if hostile is not None:
                hostile.stop()
            watch.close()
            drip.close()
            if process.poll() is None:
                process.kill()

    base = rows[0]
    print(f"{'pattern':<16}{'score p50':>11}{'score p99':>11}{'health p50':>12}{'health p99':>12}"
          f"{'peak RSS':>10}{'+workers':>10}{'answer/req':>11}  hostile answers")  # fmt: skip
    for row in rows:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(row["hostile"].items())) or "-"
        print(f"{row['pattern']:<16}{row['score_p50'] * 1e3:>9.0f}ms{row['score_p99'] * 1e3:>9.0f}ms"
              f"{row['health_p50'] * 1e3:>10.0f}ms{row['health_p99'] * 1e3:>10.0f}ms"
              f"{row['peak_rss'] / 2**20:>8.0f}MB{row['peak_rss_tree'] / 2**20:>8.0f}MB"
              f"{row['answer_ratio']:>10.2f}x  {statuses}")  # fmt: skip
    hostile_rows = rows[1:]
    worst = max(max(r["score_p99"], r["health_p99"]) for r in hostile_rows)
    base_p99 = max(base["score_p99"], base["health_p99"])
    peak = max(r["peak_rss"] for r in rows)
    ratio = max(r["answer_ratio"] for r in rows)
    met = worst <= 1.0 and worst <= 5 * base_p99 and peak < 1.5 * 2**30 and ratio <= 10 and sigterm_s <= 2.0
    print(f"summary: victim p99 {worst * 1e3:.0f} ms under the worst hostile load vs {base_p99 * 1e3:.0f} ms without "
          f"({worst / base_p99:.1f}x; goal <= 1 s and <= 5x); server peak RSS {peak / 2**20:.0f} MB (goal < 1536); "
          f"answers <= {ratio:.2f}x their request (goal <= 10x); SIGTERM honoured in {sigterm_s:.2f} s (goal <= 2); "
          f"{'every goal met' if met else 'GOALS MISSED'}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "sigterm_s": sigterm_s, "met": met}, indent=1))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
