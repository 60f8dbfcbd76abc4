"""Judge cost in the policy's GRPO loop, and rewards per second in process against through the reward server.

    python benchmarks/policy_rl.py [--steps 20] [--groups 16]

Two measurements on the tiny setup (``recipes/rl_tiny_cpu.yaml``: a tiny random policy, G = 8, the shipped yes/no
prompts), each with two judges: the ``rule`` backend, and the untrained tiny judge (``genrm tiny-model``) run by the
``transformers`` backend with XGrammar-constrained answers, a stand-in for a model judge:

1. **judge share of a GRPO step**: ``--steps`` GRPO steps with the judge in process; the time spent inside the
   reward function over the wall time of the steps;
2. **rewards per second**: ``--groups`` groups of G completions (the shipped example set's responses) scored in
   process (:class:`policy_rl.scorers.JudgeScorer`) and through a ``genrm serve`` on loopback
   (:class:`policy_rl.scorers.ServerScorer`), one group per request, as the reward function sends them; each path
   is warmed up on one pass of other responses first.

On a GPU machine pass ``--policy`` and ``--judge-model`` to measure a larger setup.
"""

from __future__ import annotations

import argparse
import logging
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from genrm.jsonl import read_jsonl_lines  # noqa: E402
from genrm.methods.rubric.models import Instance  # noqa: E402
from genrm.methods.rubric.scoring import InstanceResult  # noqa: E402
from policy_rl.method_reward import MethodReward  # noqa: E402
from policy_rl.scorers import JudgeScorer, ServerScorer  # noqa: E402

G = 8
ROOT = _HERE.parent
EXAMPLES = ROOT / "datasets" / "examples" / "reward_core.jsonl"
PROMPTS = ROOT / "datasets" / "policy_rl" / "yes_no.jsonl"


class TimedScorer:
    """Wraps a scorer and adds up the seconds spent in it."""

    def __init__(self, scorer) -> None:
        self.scorer, self.seconds, self.calls = scorer, 0.0, 0

    def __call__(self, instances):
        start = time.perf_counter()
        try:
            return self.scorer(instances)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def _judge(kind: str, model: str | None):
    from genrm.engine import EngineOptions, SamplingSettings, make_judge

    spec = "rule" if kind == "rule" else f"transformers:{model}"
    return make_judge(spec, EngineOptions(SamplingSettings(max_tokens=256), device="cpu"))


def grpo_share(kind: str, model: str | None, policy: str, steps: int, workdir: Path) -> tuple[float, float]:
    """Seconds per GRPO step and the share of it spent judging."""
    from trl import GRPOConfig

    from genrm.methods import make_method
    from policy_rl.data import policy_dataset
    from policy_rl.trainer import MethodGRPOTrainer

    method = make_method("rubric")
    timed = TimedScorer(JudgeScorer(_judge(kind, model), method))
    args = GRPOConfig(output_dir=str(workdir / f"grpo-{kind}"), per_device_train_batch_size=16, num_generations=G,
                      max_completion_length=6, temperature=1.0, learning_rate=5e-3, max_steps=steps, use_cpu=True,
                      bf16=False, gradient_checkpointing=False, report_to="none", save_strategy="no",
                      logging_steps=steps, seed=0,
                      disable_tqdm=True)  # fmt: skip
    trainer = MethodGRPOTrainer(model=policy, reward_funcs=[MethodReward(method, timed)], args=args,
                                train_dataset=policy_dataset(PROMPTS))  # fmt: skip
    start = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - start
    return wall / steps, timed.seconds / wall


def _groups(count: int, run: int) -> list[Instance]:
    # Each run's responses differ (a reasoning block the extractor skips), so no verifier result is reused.
    instances = [Instance.model_validate_json(line) for line in read_jsonl_lines(EXAMPLES)]
    return [i.model_copy(update={"responses": [f"<think>run {run}, sample {k}</think>{r}"
                                               for k, r in enumerate((i.responses * G)[:G])]})
            for i in (instances * count)[:count]]  # fmt: skip


def _rate(scorer, groups: list[Instance]) -> float:
    start = time.perf_counter()
    for group in groups:
        scorer([group])
    return len(groups) * G / (time.perf_counter() - start)


def _serve(kind: str, model: str | None) -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "genrm", "serve", "--port", str(port), "--log-level", "warning"]
    if kind == "transformers":
        command += ["--backend", "transformers", "--model", str(model), "--device", "cpu", "--max-tokens", "256"]
    process = subprocess.Popen(command, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    from serving.client import RewardClient, RewardServerError

    deadline = time.monotonic() + 120
    with RewardClient(url, retries=0, timeout_s=2) as probe:
        while True:
            try:
                probe.health()
                return process, url
            except RewardServerError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the {kind} server did not start") from None
                time.sleep(0.2)


def rewards_per_second(kind: str, model: str | None, count: int) -> tuple[float, float]:
    """Rewards per second in process and through the server, one group per call, after a warm-up pass (verifier
    worker pool, imports, compiled grammars) on other responses."""
    local = JudgeScorer(_judge(kind, model))
    _rate(local, _groups(count, 0))
    in_process = _rate(local, _groups(count, 1))
    process, url = _serve(kind, model)
    try:
        remote = ServerScorer(url, InstanceResult)
        _rate(remote, _groups(count, 0))
        served = _rate(remote, _groups(count, 1))
        remote.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
    return in_process, served


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="GRPO steps per judge (default 20)")
    parser.add_argument("--groups", type=int, default=16, help="groups of G=8 scored per path (default 16)")
    parser.add_argument("--policy", help="policy checkpoint (default: a tiny random policy made here)")
    parser.add_argument("--judge-model", help="judge checkpoint (default: the untrained tiny judge made here)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        policy = args.policy
        if policy is None:
            from policy_rl.data import read_instances
            from policy_rl.tiny_policy import save_tiny_policy

            prompts = read_instances(read_jsonl_lines(PROMPTS))
            policy = str(save_tiny_policy(workdir / "policy", [i.prompt for i in prompts] + ["yes", "no"]))
        model = args.judge_model
        if model is None:
            from genrm.training.tiny_model import save_tiny_judge

            model = str(save_tiny_judge(workdir / "judge"))
        rows = []
        for kind in ("rule", "transformers"):
            step_s, share = grpo_share(kind, model, policy, args.steps, workdir)
            in_process, served = rewards_per_second(kind, model, args.groups)
            rows.append((kind, step_s, share, in_process, served))
    print(
        "\n| judge | GRPO s/step | judge share of step | rewards/s in process | rewards/s via server "
        "| server/in-process |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kind, step_s, share, in_process, served in rows:
        ratio = served / in_process
        print(f"| {kind} | {step_s:.3f} | {share:.1%} | {in_process:,.1f} | {served:,.1f} | {ratio:.2f}x |")
    rule, model_row = rows
    print(f"\nsummary: judge share of a GRPO step {rule[2]:.1%} (rule) and {model_row[2]:.1%} (tiny model judge); "
          f"server path at {rule[4] / rule[3]:.2f}x (rule) and {model_row[4] / model_row[3]:.2f}x (model) "
          "the in-process rewards per second")  # fmt: skip


if __name__ == "__main__":
    main()
