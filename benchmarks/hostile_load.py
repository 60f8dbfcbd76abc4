"""One client cannot stall or exhaust the reward server: a victim's latency under hostile load, memory, answer size.

    python benchmarks/hostile_load.py [--victim-requests 60] [--hostile-clients 6] [--json FILE]

A ``genrm serve`` process (rule judge, default settings, a record log, image URLs allowed from a loopback host,
``--group-size 4`` for ``/get_reward``) is measured phase by phase. In each phase a victim (a process of its own, as
another client would be) sends requests of three size classes one at a time, in turn: ``small`` (``/v1/score``, one
group of three short responses: scored in the server's process), ``18kB`` (the same group with an 18 kB response:
scored in a worker) and ``health``, while ``--hostile-clients`` clients send one hostile pattern as fast as the server
answers them:

- ``none``: no hostile load (the victim's baseline);
- ``quadratic_text``: groups of 64 responses of 100,000 characters of ``\\boxed{``, ``\\(`` and ``<think>`` (the scans
  that were quadratic took 17-60 s each);
- ``image_bombs``: a 2.5 kB lossless WebP of 8000 x 8000 pixels, a JPEG of 5,000 scans, a PNG of 8192 x 8192 pixels;
- ``drip_urls``: image URLs whose host sends one byte a second;
- ``amplifying``: 64 one-word responses against 128 criteria of 2,000 characters, five groups a request (records grow
  as responses x criteria);
- ``large_bodies``: 8 MB requests of 80 groups of 64 responses;
- ``abandoning``: requests whose checks take about 16 s (light and heavy by size), from clients that give up after
  2 s and send the next (the record log must hold none of them);
- ``heavy_then_small``: 800 kB requests of 8 responses of 100,000 characters of ``\\(`` (a worker held for a whole
  request once put an 18 kB request's p99 at 14.9 s);
- ``retained_groups``: ``/get_reward`` requests of 4 queries of one instance, a group of about 0.75 MB (a rubric of
  128 long criteria and responses of 99,000 characters), each a whole gathered group that is judged and kept for
  retries;
- ``header_drips``, ``body_drips``: 40 connections each, sending a request head, or a body after its head, a byte
  every 2 s (the server must close every one within 15 s).

For each phase: the victim's p50 and p99 for each class, the hostile requests answered and their statuses, the peak
resident memory of the server process and of its whole process tree, the largest answer-to-request ratio seen, and
the phase's own count (abandoned requests logged, drip connections still open). At the end, SIGTERM is sent while
the last hostile load runs, and the time to exit is reported.

Goals on a 2-core machine: every victim class's p99 under every hostile load within 5x its no-load p99 (and within
1 s); the process tree's peak RSS under 1.5 GB; answers at most 10x their request; no request answered 500 or with a
traceback; no record logged for a request no client was answered for; every drip connection closed within 15 s;
SIGTERM within 3 s.
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
# The same group, over the 16 KiB a request may have to be scored in the server's own process: scored in a worker.
VICTIM_18KB = {**VICTIM, "id": "victim-18kb", "responses": [*VICTIM["responses"], "It is 42. " + "Indeed. " * 2_250]}
CLASSES = ("small", "18kB", "health")
ABANDONED = "abandoned"


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
    # eight checks that each run to the 2 s verifier deadline: about 16 s of work on a worker's one expression worker
    slow = [rf"\boxed{{\sum_{{n=1}}^{{10^{{7}}}} \frac{{{k + 1}}}{{n^3}}}}" for k in range(8)]
    expr_rubric = {"essential": [{"criterion": "Gives the sum.", "reference": "expr_verify(target='1.2')",
                                  "weight": 1}]}  # fmt: skip
    abandoning = [_body(_group(f"{ABANDONED}-{k}", [f"{answer} " + "and so on " * filler for answer in slow],
                               rubric=expr_rubric))
                  for k, filler in enumerate([200, 4_000] * 8)]  # fmt: skip
    heavy = [_body(_group("heavy", [("\\(" * long)[:long]] * 8))]
    return {"quadratic_text": text, "image_bombs": _image_bombs(), "drip_urls": drips, "amplifying": amplifying,
            "large_bodies": large, "abandoning": abandoning, "heavy_then_small": heavy,
            "retained_groups": _retained_groups()}  # fmt: skip


def _retained_groups() -> list[tuple[str, bytes]]:
    """``/get_reward`` bodies of 4 queries of one instance (a group of about 0.75 MB): a whole group (the server's
    group size)."""
    bodies = []
    for k in range(16):
        prompt = (f"Group {k}. " + "Read this. " * 9_000)[:90_000]
        label = json.dumps({"id": f"retained-{k}", "prompt": prompt, "task_type": "general",
                            "rubric": _rubric(128, 1_900)})  # fmt: skip
        responses = [(f" \\boxed{{yes}} {j} " + "and so on " * 10_000)[:99_000] for j in range(4)]
        body = {"query": [prompt + response for response in responses], "prompts": [prompt] * 4,
                "labels": [label] * 4}  # fmt: skip
        bodies.append(("/get_reward", json.dumps(body).encode()))
    return bodies


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
    """``clients`` threads that each post the bodies in turn (to ``/v1/score``, or to the path given with a body)
    until stopped, each request with a client timeout of ``timeout_s``."""

    def __init__(self, url: str, bodies: list, clients: int, timeout_s: float = 120.0) -> None:
        self.statuses: Counter[str] = Counter()
        self.ratio, self.tracebacks = 0.0, 0
        self.count = 0  # what the phase counts of its own: none here
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(url, bodies, k, timeout_s), daemon=True)
                         for k in range(clients)]  # fmt: skip
        for thread in self._threads:
            thread.start()

    def _run(self, url: str, bodies: list, offset: int, timeout_s: float) -> None:
        headers = {"content-type": "application/json"}
        with httpx.Client(base_url=url, timeout=timeout_s) as http:
            k = offset
            while not self._stop.is_set():
                item = bodies[k % len(bodies)]
                path, body = item if isinstance(item, tuple) else ("/v1/score", item)
                k += 1
                try:
                    answer = http.post(path, content=body, headers=headers)
                    status, size = str(answer.status_code), len(answer.content)
                    traceback = b"Traceback" in answer.content[:100_000]
                except httpx.HTTPError as exc:
                    status, size, traceback = type(exc).__name__, 0, False
                with self._lock:
                    self.statuses[status] += 1
                    self.ratio = max(self.ratio, size / len(body))
                    self.tracebacks += traceback

    def stop(self, wait_s: float = 0.0) -> None:
        """Stop sending; wait up to ``wait_s`` for the requests under way to be answered."""
        self._stop.set()
        end = time.monotonic() + wait_s
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))


class Drips:
    """``connections`` connections that each send ``head`` and then ``drip`` a byte every 2 s, until the server closes
    them; :attr:`count` is how many are still open."""

    def __init__(self, port: int, head: bytes, drip: bytes, connections: int) -> None:
        self.statuses: Counter[str] = Counter()
        self.ratio, self.tracebacks, self.count = 0.0, 0, connections
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(port, head, drip), daemon=True)
                         for _ in range(connections)]  # fmt: skip
        for thread in self._threads:
            thread.start()

    def _run(self, port: int, head: bytes, drip: bytes) -> None:
        answer = b""
        try:
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(head)
                sock.settimeout(2.0)
                for k in range(10_000):
                    if self._stop.is_set():
                        return
                    try:
                        sock.sendall(drip[k % len(drip) : k % len(drip) + 1])
                        chunk = sock.recv(65_536)
                    except TimeoutError:
                        continue
                    if not chunk:
                        break
                    answer += chunk
        except OSError:
            pass
        status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/1.1 ") else "closed"
        with self._lock:
            self.count -= 1
            self.statuses[status] += 1
            self.tracebacks += b"Traceback" in answer

    def stop(self, wait_s: float = 0.0) -> None:
        """Wait up to ``wait_s`` for the server to close every connection, then stop."""
        end = time.monotonic() + wait_s
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))
        self._stop.set()


_HEAD = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def _victim(url: str, requests: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in CLASSES}
    with httpx.Client(base_url=url, timeout=120) as http:
        for k in range(-len(CLASSES), requests):  # one of each class first, untimed: the connection and the workers
            name = CLASSES[k % len(CLASSES)]
            start = time.perf_counter()
            if name == "health":
                assert http.get("/health").status_code == 200
            else:
                group = VICTIM if name == "small" else VICTIM_18KB
                answer = http.post("/v1/score", json={"groups": [group]})
                rewards = answer.json()["groups"][0]["rewards"] if answer.status_code == 200 else None
                assert rewards is not None and rewards[:3] == [1.0, 0.0, 0.0], answer
            if k >= 0:
                times[name].append(time.perf_counter() - start)
    return times


def _logged_abandoned(log: Path) -> int:
    """Records of the abandoning phase's requests in the record log (each had its client gone before its answer)."""
    if not log.exists():
        return 0
    return sum(f'"{ABANDONED}-'.encode() in line for line in log.read_bytes().splitlines())


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    """Run the phases; print the table and one summary line. Exit 0 when every goal is met, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--victim-requests", type=int, default=60, help="victim requests per phase (60)")
    parser.add_argument("--phases", nargs="*", help="only these hostile phases (default: all)")
    parser.add_argument("--hostile-clients", type=int, default=6, help="hostile clients per phase (6)")
    parser.add_argument("--warm-s", type=float, default=2.0, help="seconds of hostile load before the victim starts")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    drip = DripServer()
    patterns = _patterns(drip.url)
    port = free_port()
    loads = {name: (lambda bodies=bodies: Hostile(url, bodies, args.hostile_clients))
             for name, bodies in patterns.items()}  # fmt: skip
    loads["abandoning"] = lambda: Hostile(url, patterns["abandoning"], 3, timeout_s=2.0)
    loads["header_drips"] = lambda: Drips(port, b"", _HEAD + b"X-Slow: " + b"a" * 1000, 40)
    loads["body_drips"] = lambda: Drips(port, _HEAD + b"Content-Length: 1000\r\n\r\n", b" " * 1000, 40)
    # the last phase runs on while SIGTERM is sent
    names = [name for name in loads if name != "large_bodies" and (not args.phases or name in args.phases)]
    names += ["large_bodies"] if not args.phases or "large_bodies" in args.phases else []
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "records.jsonl"
        command = [sys.executable, "-m", "genrm", "serve", "--port", str(port), "--log-level", "error",
                   "--record-log", str(log), "--image-url-hosts", "127.0.0.1", "--image-private-addresses",
                   "--image-fetch-timeout-s", "2", "--group-size", "4"]  # fmt: skip
        process, url = start_server(command, port, None, "reward")
        watch = MemoryWatch(process.pid)
        victims = multiprocessing.get_context("spawn")
        rows, hostile = [], None
        try:
            for name in ["none", *names]:
                watch.reset()
                hostile = loads[name]() if name != "none" else None
                time.sleep(args.warm_s if hostile else 0.0)
                with victims.Pool(1) as pool:  # another client is another process: it shares no GIL with these
                    times = pool.apply(_victim, (url, args.victim_requests))
                if isinstance(hostile, Drips):  # the bound is on how long a connection stays open: always waited for
                    hostile.stop(wait_s=15.0)
                elif hostile is not None and name != names[-1]:
                    hostile.stop(wait_s=300.0)  # the next phase starts on an idle server
                    if name == "abandoning":
                        time.sleep(20.0)  # work that was not stopped would now be logged
                        hostile.count = _logged_abandoned(log)
                rows.append({
                    "pattern": name,
                    **{f"{what}_{q}": _quantile(times[what], level) for what in times
                       for q, level in (("p50", 0.5), ("p99", 0.99))},
                    "hostile": dict(hostile.statuses) if hostile else {},
                    "answer_ratio": hostile.ratio if hostile else 0.0,
                    "tracebacks": hostile.tracebacks if hostile else 0,
                    "count": hostile.count if hostile else 0,
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
    print(f"{'pattern':<17}" + "".join(f"{name + ' p50':>12}{name + ' p99':>12}" for name in CLASSES)
          + f"{'peak RSS':>10}{'tree':>8}{'answer/req':>11}{'count':>6}  hostile answers")  # fmt: skip
    for row in rows:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(row["hostile"].items())) or "-"
        print(f"{row['pattern']:<17}"
              + "".join(f"{row[name + '_p50'] * 1e3:>10.0f}ms{row[name + '_p99'] * 1e3:>10.0f}ms" for name in CLASSES)
              + f"{row['peak_rss'] / 2**20:>8.0f}MB{row['peak_rss_tree'] / 2**20:>6.0f}MB"
              f"{row['answer_ratio']:>10.2f}x{row['count']:>6}  {statuses}")  # fmt: skip
    hostile_rows = rows[1:]
    slowdown = {name: max(r[f"{name}_p99"] for r in hostile_rows) / base[f"{name}_p99"] for name in CLASSES}
    worst_s = max(r[f"{name}_p99"] for r in hostile_rows for name in CLASSES)
    worst_class = max(slowdown, key=slowdown.__getitem__)
    peak = max(r["peak_rss_tree"] for r in rows)
    ratio = max(r["answer_ratio"] for r in rows)
    errors = sum(r["hostile"].get("500", 0) + r["tracebacks"] for r in rows)
    logged = sum(r["count"] for r in rows if r["pattern"] == "abandoning")
    still_open = sum(r["count"] for r in rows if r["pattern"].endswith("_drips"))
    met = (max(slowdown.values()) <= 5 and worst_s <= 1.0 and peak < 1.5 * 2**30 and ratio <= 10 and not errors
           and not logged and not still_open and sigterm_s <= 3.0)  # fmt: skip
    print(f"summary: worst victim p99 {slowdown[worst_class]:.1f}x its no-load p99 ({worst_class}; goal <= 5x), "
          f"{worst_s * 1e3:.0f} ms at most (goal <= 1 s); process tree peak RSS {peak / 2**20:.0f} MB (goal < 1536); "
          f"answers <= {ratio:.2f}x their request (goal <= 10x); {errors} answers 500 or with a traceback (goal 0); "
          f"{logged} abandoned requests logged (goal 0); {still_open} drip connections open after 15 s (goal 0); "
          f"SIGTERM honoured in {sigterm_s:.2f} s (goal <= 3); "
          f"{'every goal met' if met else 'GOALS MISSED'}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "sigterm_s": sigterm_s, "met": met}, indent=1))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
