"""How much the suite's two learning runs learn, over seeds, and whether a run repeats itself exactly.

    python studies/learning_spread/run.py [--policy-seeds 20] [--judge-seeds 5] [--repeats 3] [--broken]

The suite asserts that two real training runs learn (``tests/test_policy_grpo.py``: GRPO of the tiny policy against
the rule judge; ``tests/test_train_judge.py``: RLVR of the tiny SFT judge on two prompts). A learning test must fail
only when learning is broken, so its threshold has to sit well below the effect every healthy run shows. This script
runs exactly the suite's runs under other seeds (each seed changes the initial sampling, as another CPU's arithmetic
would), prints the effect each one reached, and the margin between the smallest effect and the test's threshold.
``--repeats`` runs seed 0 again and says whether the logs were identical (the runs are seeded and single-machine
deterministic). ``--broken`` adds control runs with the reward replaced by a constant 0: the effect must vanish,
and the test's assertion must fail on them.

The policy effect is the rule judge's raw essential score, mean of the last 4 logs minus the first 4 (32 logs of 5
steps): what the policy reaches, whatever the reward made of it (the reward's own rise is shown beside it). The
judge effect is
the strict format reward of 64 fresh answers (32 per prompt, temperature 0.7, seeded) after RLVR minus before.
About 4 s per policy seed and 6 minutes per judge seed on 2 cores, plus 5 minutes of SFT for the judge.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
sys.path[:] = [str(_ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from genrm.cli import main as genrm  # noqa: E402
from genrm.jsonl import read_jsonl_lines  # noqa: E402

# The thresholds the suite asserts: keep in step with the tests named above.
POLICY_THRESHOLD = 0.05
JUDGE_THRESHOLD = 0.10
JUDGE_PROMPTS = 2
JUDGE_SAMPLES = 32


def _logged(run: Path, key: str) -> list[float]:
    return [e[key] for e in json.loads((run / "log_history.json").read_text()) if key in e]


def _first_last(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values[:4]), statistics.mean(values[-4:])


@contextlib.contextmanager
def _zero_reward(broken: bool) -> Iterator[None]:
    """Replace the rewards the two runs learn from by a constant 0 (a broken reward the tests must catch)."""
    if not broken:
        yield
        return
    import genrm.methods.rubric.judge_rewards as judge_rewards
    from policy_rl.method_reward import MethodReward

    def format_reward_func(completions, **columns):  # the logged names of the real ones
        return [0.0] * len(completions)

    def content_reward_func(completions, **columns):
        return [0.0] * len(completions)

    # the rubric method's judge training reads its reward functions from this module when a run starts
    saved_funcs = judge_rewards.format_reward_func, judge_rewards.content_reward_func
    saved_rewards = MethodReward.rewards
    judge_rewards.format_reward_func, judge_rewards.content_reward_func = format_reward_func, content_reward_func
    # genrm rl takes the rubric's rewards from here, over whole groups (policy_rl.trainer)
    MethodReward.rewards = lambda self, outcomes, group_size=None: [0.0] * len(outcomes)
    try:
        yield
    finally:
        judge_rewards.format_reward_func, judge_rewards.content_reward_func = saved_funcs
        MethodReward.rewards = saved_rewards


def policy_run(policy: Path, out: Path, seed: int, broken: bool, steps: int) -> dict[str, object]:
    """The suite's policy run (``recipes/rl_tiny_cpu.yaml``) under ``seed``: first and last 4 logged mean rewards,
    and the same of the judge's raw essential score (what the policy reaches whatever the reward made of it)."""
    args = ["rl", "--config", "recipes/rl_tiny_cpu.yaml", "--model_name_or_path", str(policy), "--output_dir",
            str(out), "--seed", str(seed), "--max_steps", str(steps), "--plot", "false"]  # fmt: skip
    with _zero_reward(broken):
        if genrm(args) != 0:
            raise RuntimeError(f"genrm rl failed for seed {seed}")
    rewards = _logged(out, "reward")
    first, last = _first_last(rewards)
    raw_first, raw_last = _first_last(_logged(out, "rubric/raw_essential"))
    return {"seed": seed, "first": first, "last": last, "reward rise": last - first, "raw first": raw_first,
            "raw last": raw_last, "effect": raw_last - raw_first, "log": rewards}  # fmt: skip


def judge_run(sft: Path, out: Path, seed: int, broken: bool) -> dict[str, object]:
    """The suite's judge RLVR run (2 prompts, 30 steps) under ``seed``: sampled format reward before and after."""
    from genrm.methods.rubric.evaluation.reliability import sampled_format_reward
    from genrm.methods.rubric.judge_data import read_examples

    with open(_ROOT / "datasets" / "judge_synth" / "train.jsonl", encoding="utf-8") as source:
        trained_on = read_examples(source)[:JUDGE_PROMPTS]
    before = sampled_format_reward(sft, trained_on, JUDGE_SAMPLES)
    args = ["train", "rlvr", "--config", "recipes/rlvr_tiny_cpu.yaml", "--model_name_or_path", str(sft),
            "--output_dir", str(out), "--max_examples", str(JUDGE_PROMPTS), "--max_steps", "30", "--logging_steps",
            "2", "--seed", str(seed), "--plot", "false"]  # fmt: skip
    with _zero_reward(broken):
        if genrm(args) != 0:
            raise RuntimeError(f"genrm train rlvr failed for seed {seed}")
    after = sampled_format_reward(out, trained_on, JUDGE_SAMPLES)
    first, last = _first_last(_logged(out, "rewards/format_reward_func/mean"))
    return {"seed": seed, "first": first, "last": last, "before": before, "after": after, "effect": after - before,
            "log": _logged(out, "loss")}  # fmt: skip


def _print_table(title: str, rows: list[dict[str, object]], columns: list[str], threshold: float) -> float:
    print(f"\n{title}")
    print("| " + " | ".join(["run"] + columns) + " | passes |")
    print("| --- " * (len(columns) + 2) + "|")
    for row in rows:
        name = f"seed {row['seed']}" + (" (reward 0)" if row.get("broken") else "")
        values = [f"{row[c]:.3f}" for c in columns]
        print(f"| {name} | " + " | ".join(values) + f" | {'yes' if row['effect'] >= threshold else 'NO'} |")
    healthy = [float(r["effect"]) for r in rows if not r.get("broken")]
    if healthy:
        print(f"healthy effects: min {min(healthy):.3f}, mean {statistics.mean(healthy):.3f}, "
              f"max {max(healthy):.3f}; threshold {threshold}")  # fmt: skip
    return min(healthy) if healthy else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy-seeds", type=int, default=20, help="seeds 0..N-1 of the policy run")
    parser.add_argument("--policy-steps", type=int, default=160, help="steps of each policy run (the recipe's)")
    parser.add_argument("--judge-seeds", type=int, default=5, help="seeds 0..N-1 of the judge RLVR run (0: skip)")
    parser.add_argument("--first-judge-seed", type=int, default=0, help="start the judge seeds here")
    parser.add_argument("--repeats", type=int, default=3, help="extra runs of seed 0 checked for identical logs")
    parser.add_argument("--broken", action="store_true", help="add control runs with a constant-0 reward")
    args = parser.parse_args()
    from policy_rl.data import read_instances
    from policy_rl.tiny_policy import save_tiny_policy

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        instances = read_instances(read_jsonl_lines(_ROOT / "datasets" / "policy_rl" / "yes_no.jsonl"))
        policy = save_tiny_policy(root / "policy", [i.prompt for i in instances] + ["yes", "no"])
        runs = [policy_run(policy, root / f"rl{s}", s, False, args.policy_steps) for s in range(args.policy_seeds)]
        again = args.repeats if runs else 0
        repeats = [policy_run(policy, root / f"rl0r{k}", 0, False, args.policy_steps)["log"] for k in range(again)]
        policy_same = all(log == runs[0]["log"] for log in repeats) if runs else None
        if args.broken and runs:
            runs.append({**policy_run(policy, root / "rl-broken", 0, True, args.policy_steps), "broken": True})
        title = "GRPO of the tiny policy, first and last 4 logs: mean reward, and the judge's raw essential score"
        columns = ["first", "last", "reward rise", "raw first", "raw last", "effect"]
        policy_min = _print_table(title, runs, columns, POLICY_THRESHOLD)
        print(f"seed 0 repeated {args.repeats}x: logs identical: {policy_same}")
        judge_min, judge_same = float("nan"), None
        if args.judge_seeds:
            sft = root / "sft"
            if genrm(["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path",
                      str(root / "base"), "--output_dir", str(sft), "--plot", "false"]) != 0:  # fmt: skip
                raise RuntimeError("genrm train sft failed")
            seeds = range(args.first_judge_seed, args.first_judge_seed + args.judge_seeds)
            judged = [judge_run(sft, root / f"rlvr{s}", s, False) for s in seeds]
            again = [judge_run(sft, root / f"rlvr-again{k}", seeds[0], False) for k in range(min(args.repeats, 1))]
            judge_same = all(r["log"] == judged[0]["log"] and r["after"] == judged[0]["after"] for r in again)
            if args.broken:
                judged.append({**judge_run(sft, root / "rlvr-broken", seeds[0], True), "broken": True})
            title = "RLVR of the tiny judge, sampled format reward (64 answers) before and after"
            columns = ["before", "after", "first", "last", "effect"]
            judge_min = _print_table(title, judged, columns, JUDGE_THRESHOLD)
            print(f"seed 0 repeated: logs and sampled reward identical: {judge_same}")
    print(f"\nsmallest healthy effect: policy {policy_min:.3f} (test asserts >= {POLICY_THRESHOLD}), judge "
          f"{judge_min:.3f} (test asserts >= {JUDGE_THRESHOLD}); repeated runs identical: policy {policy_same}, "
          f"judge {judge_same}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
