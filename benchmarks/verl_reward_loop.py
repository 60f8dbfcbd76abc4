"""verl's reward loop with whole groups against one reward server: rows/s and time per row, 2, 4 and 8 workers.

    $GENRM_VERL_PYTHON benchmarks/verl_reward_loop.py [--groups 128] [--workers 2 4 8]

Runs in an environment with verl 0.7.0 and genrm (``.ci/conformance-envs`` builds one). ``genrm serve`` (the rule
judge) is started on loopback and a local Ray cluster beside it. For each worker count, verl's ``RewardLoopManager``
(verl's default config, the reward loop recipe of docs/policy-rl.md) hands one batch of ``--groups`` groups of 4 rows
(five reward_core examples' responses, each group its own ``uid``) to that many ``RewardLoopWorker`` actors, which
send each row to the group gatherer; each whole group is one request to the server. A warm-up batch first (the
workers start and load verl), then one timed batch. Printed per worker count: rows, seconds, rows/s, and the time of
one row from the moment its worker takes it to its reward (its wait for the rest of its group included), p50 and p99;
then one summary line.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from policy_rl.verl_reward_loop import GATHERER_NAME, GroupedRewardManager  # noqa: E402

_N = 4
#: Examples the rule judge scores whole (no fuzzy criterion), with partial rewards, of 4 responses each.
_CHOSEN = ("box-001", "ocr-001", "ocr-002", "time-001", "point-001")


class TimedGroupedRewardManager(GroupedRewardManager):
    """The grouped manager, each row's seconds in its worker added to its extra info (``row_seconds``)."""

    async def run_single(self, data):
        """As the grouped manager, timed."""
        start = time.perf_counter()
        out = await super().run_single(data)
        out["reward_extra_info"]["row_seconds"] = time.perf_counter() - start
        return out


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server(port: int):
    import httpx

    process = subprocess.Popen([sys.executable, "-m", "genrm", "serve", "--port", str(port), "--log-level",
                                "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("verl_reward_loop: genrm serve did not start in 120 s")


def _batch(instances, tokenizer, groups: int):
    import numpy as np
    import torch
    from verl import DataProto

    from policy_rl.verl_reward import verl_row

    rows = [(g, instances[g % len(instances)], text) for g in range(groups)
            for text in instances[g % len(instances)].responses]  # fmt: skip
    pad = tokenizer.pad_token_id
    prompts = [tokenizer(instance.prompt)["input_ids"] for _, instance, _ in rows]
    responses = [tokenizer(text)["input_ids"] for _, _, text in rows]
    width_p, width_r = max(map(len, prompts)), max(map(len, responses))
    prompt_ids = torch.tensor([[pad] * (width_p - len(p)) + p for p in prompts])
    response_ids = torch.tensor([r + [pad] * (width_r - len(r)) for r in responses])
    attention = torch.cat([(prompt_ids != pad).long(), (response_ids != pad).long()], dim=1)
    uids = [str(uuid.uuid4()) for _ in range(groups)]
    made = [verl_row(instance, g) for g, instance, _ in rows]
    return DataProto.from_dict(
        tensors={"prompts": prompt_ids, "responses": response_ids, "attention_mask": attention},
        non_tensors={"data_source": np.array([m["data_source"] for m in made], dtype=object),
                     "reward_model": np.array([m["reward_model"] for m in made], dtype=object),
                     "extra_info": np.array([m["extra_info"] for m in made], dtype=object),
                     "uid": np.array([uids[g] for g, _, _ in rows], dtype=object)},
    )  # fmt: skip


def _config(tokenizer_dir: str, url: str, workers: int):
    import verl
    from hydra import compose, initialize_config_dir

    overrides = [
        f"actor_rollout_ref.model.path={tokenizer_dir}",
        f"actor_rollout_ref.rollout.n={_N}",
        "custom_reward_function.path=pkg://policy_rl.verl_reward",
        "custom_reward_function.name=compute_score_batch",
        f"+custom_reward_function.reward_kwargs.judge={url}",
        "reward_model.reward_loop_source=importlib",
        f"reward_model.reward_loop_module_path={Path(__file__).resolve()}",
        "reward_model.reward_loop_class_name=TimedGroupedRewardManager",
        f"reward_model.num_workers={workers}",
    ]
    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        return compose("ppo_trainer", overrides=overrides)


def _run(config, warm, timed) -> tuple[float, list[float], list[float]]:
    import ray
    from verl.experimental.reward_loop import RewardLoopManager

    manager = RewardLoopManager(config)
    try:
        manager.compute_rm_score(warm)
        start = time.perf_counter()
        out = manager.compute_rm_score(timed)
        seconds = time.perf_counter() - start
    finally:
        ray.kill(ray.get_actor(GATHERER_NAME.format(0)))
        for worker in manager.reward_loop_workers:
            ray.kill(worker)
    rows = [float(s) for s in out.non_tensor_batch["row_seconds"]]
    partial = [float(s) for s in out.non_tensor_batch["group_partial"]]
    return seconds, rows, partial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=128, help="groups of 4 rows in the timed batch (default 128)")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8], help="reward loop workers to try")
    args = parser.parse_args()
    if args.groups < 1 or any(w < 1 or args.groups * _N % w for w in args.workers):
        parser.error("--groups x 4 rows must split evenly over every --workers count")

    import ray

    from genrm.methods.rubric.models import Instance
    from genrm.training.tiny_model import build_tokenizer

    lines = (ROOT / "datasets" / "examples" / "reward_core.jsonl").read_text(encoding="utf-8").splitlines()
    instances = [Instance.model_validate_json(line) for line in lines if line.strip()]
    instances = [i for i in instances if i.id in _CHOSEN]
    tokenizer = build_tokenizer([t for i in instances for t in [i.prompt, *i.responses]], vocab_size=400)
    port = _free_port()
    server = _server(port)
    ray.init(num_cpus=max(args.workers) + 1, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False)  # fmt: skip
    results = []
    try:
        with tempfile.TemporaryDirectory() as work:
            tokenizer.save_pretrained(work)
            for workers in args.workers:
                config = _config(work, f"http://127.0.0.1:{port}", workers)
                warm = _batch(instances, tokenizer, max(args.workers))
                timed = _batch(instances, tokenizer, args.groups)
                seconds, rows, partial = _run(config, warm, timed)
                if any(partial):
                    raise SystemExit(f"verl_reward_loop: {int(sum(partial))} rows scored in partial groups")
                cuts = statistics.quantiles(rows, n=100)
                results.append((workers, len(rows), seconds, len(rows) / seconds, cuts[49] * 1e3, cuts[98] * 1e3))
    finally:
        ray.shutdown()
        server.terminate()
        server.wait(timeout=30)
    print(f"{'workers':>7} {'rows':>6} {'seconds':>8} {'rows/s':>8} {'p50 ms/row':>11} {'p99 ms/row':>11}")
    for workers, rows, seconds, rate, p50, p99 in results:
        print(f"{workers:>7} {rows:>6} {seconds:>8.2f} {rate:>8.1f} {p50:>11.1f} {p99:>11.1f}")
    best = max(results, key=lambda r: r[3])
    print(f"summary: whole groups through verl's reward loop, {best[3]:.0f} rows/s at {best[0]} workers (p99 "
          f"{best[5]:.0f} ms per row), {results[0][3]:.0f} rows/s at {results[0][0]}; "
          f"{os.cpu_count()} CPUs")  # fmt: skip


if __name__ == "__main__":
    main()
