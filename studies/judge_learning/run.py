"""Does the judge learn to judge? base -> SFT -> RLVR on held-out inputs and held-out task families, over seeds, and
the audit's loop closed: master-key false positives on held-out keys, trained without and with the audit's negatives.

    python studies/judge_learning/run.py [--inputs 2000] [--held-out grounding] [--seeds 0 1 2] [--sft-steps 600]
        [--rlvr-steps 40] [--hidden-size 128] [--layers 4] [--held-out-keys period comma colon] [--device cpu]
        [--eval-limit 200] [--curve-points 10] [--answer-format brief] [--rlvr-lr 3e-4] [--loop-steps 200]
        [--loop-lr 3e-4] [--negatives-share 0.25] [--master-key-inputs 2 2] [--rlvr-prompts hard|all]
        [--rlvr-pool 0] [--heads 4] [--kv-heads 2] [--intermediate-size 0] [--sft-config YAML]
        [--rlvr-config YAML] [--eval-batch 16] [--budget-s 0] [--jobs 1] [--out runs/judge-learning] [--results DIR]
        [--skip curve rlvr base loop whole] [--oversample FAMILY TIMES] [--quick]

What it does, every step a ``genrm`` command a user can run by hand:

1. data: ``genrm data synthetic --inputs N --held-out FAMILY`` (train, test by input, and the held-out families as
   ``test_held_out.jsonl``); ``genrm audit build`` on the train split, ``genrm data from-audit`` with the held-out keys
   excluded (``--not-in`` the test split), repeated into a copy of the train split until they are
   ``--negatives-share`` of it; ``genrm audit build`` on the test split, the audit the master keys are measured on;
2. per seed: a from-scratch judge of the given size (``genrm tiny-model``), SFT on the train split (with
   ``--oversample FAMILY TIMES``, that family's examples repeated so that SFT sees them TIMES times as often) with
   ``--curve-points`` checkpoints, RLVR from the SFT judge (the tiny CPU recipe at ``--rlvr-lr``, steps as given) on
   the train examples it gets wrong (``genrm eval --answers`` on the first ``--rlvr-pool`` of the train split, then
   ``genrm data hard``; ``--rlvr-prompts all``: the whole split), and
   the audit's loop as a user runs it: the SFT judge continued for ``--loop-steps`` at ``--loop-lr`` on the split
   with the negatives, and, as the control (the same extra steps, no negatives), on the train split alone;
3. the reliability table (``genrm eval``, free decoding by default: what the model learned; ``--decoding constrained``
   under the answer's grammar, as a served judge decodes) of base, SFT and RLVR on the test
   split and on the held-out families, mean and spread (population standard deviation) over the seeds; the SFT
   checkpoints' criterion-level accuracy on the test split against steps (the learning curve); the master-key false
   positives (share of the held-out keys' responses given any undeserved credit, ``genrm audit run`` on those
   responses alone, with the count of criteria not judged beside it) of the SFT judge and its two continuations,
   with their criterion-level accuracy on the test split (what the negatives cost); RLVR against its SFT start on
   the whole test split, example by example (a point is within the noise of ``--eval-limit`` examples, not of a
   paired comparison on every criterion); grounded extraction: each trained judge's (SFT, and RLVR where it ran)
   master keys and test split measured again with ``--grounding off`` (nothing checked against the response) and,
   for a judge that quotes evidence (``--answer-format evidence``), ``--grounding values`` (its values checked, not
   its quotes), beside the figures under the default; seconds per SFT and RLVR step; ``--skip`` leaves steps out;
4. ``judge_learning.md``, ``judge_learning.json`` and ``judge_learning.png`` (train loss, RLVR rewards, held-out
   criterion-level accuracy against steps) and each seed's figures (``seed-N.json``) in ``--results`` (default
   ``--out``, which holds the data and models), rewritten after every seed, and one summary line. A seed finished by
   an earlier run with the same settings is read back from its ``seed-N.json``, not run again, so a study cut short
   goes on where it stopped.

Every judge is trained and asked in one format version (``--answer-format``, default ``brief``: the short system
prompt, which makes a synthetic SFT sequence about a third as long as the full prompt's; see docs/rubric.md).

``--quick`` shrinks everything (a few steps, a few examples) to check that the study runs end to end, in minutes; its
figures mean nothing.

On a GPU: ``--device cuda`` with a real architecture's shape (``--hidden-size``, ``--layers``, ``--heads``,
``--kv-heads``, ``--intermediate-size``), the GPU recipes (``--sft-config recipes/sft_judge_gpu.yaml --rlvr-config
recipes/rlvr_judge_gpu.yaml``), larger evaluation batches (``--eval-batch``) and seeds side by side (``--jobs``: one
process per seed on the one device; a small model leaves most of it idle). ``--budget-s`` bounds the whole study: a
seed's steps run in order (SFT, its curve, RLVR, the tables, the audit's loop and master keys), each one started
only while the budget lasts, and each seed's figures are written after every step, so a study stopped by its budget
reports what it measured and names what it skipped. The data is made once per settings and kept in ``--out``
(``data/study_data.json`` records them), so it can be made beforehand and brought along.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[2]
sys.path[:] = [str(_ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from genrm.choices import SCORING_FORMATS, SYNTHETIC_FAMILIES, quotes_evidence  # noqa: E402
from genrm.cli import main as genrm  # noqa: E402
from genrm.cli.numbers import score_threshold  # noqa: E402
from genrm.jsonl import read_jsonl_lines  # noqa: E402
from genrm.methods.rubric.synthetic import synthetic_family  # noqa: E402

MEASURES = ["Schema", "Criterion", "Execution", "Grounded", "Arguments", "Credit", "Criterion-level", "Sample-level"]
STAGES = ["base", "SFT", "RLVR"]
SPLITS = {"test": "test.jsonl", "held-out families": "test_held_out.jsonl"}
# the audit's loop: the SFT judge as trained ("before"), then continued for --loop-steps on the train split alone
# (the control: the same extra steps without negatives) and on the train split with the audit's negatives
ARMS = ("before", "continued", "negatives")
_ARM_NAMES = {"before": "SFT", "continued": "continued, train split", "negatives": "continued, with negatives"}
FORMAT_REWARD, CONTENT_REWARD = "rewards/format_reward_func/mean", "rewards/content_reward_func/mean"
# TRL's share of a step's groups whose samples all got the same reward: their advantages are 0, so they teach nothing
NO_SPREAD = "frac_reward_zero_std"


def _run(args: list[str]) -> None:
    code = genrm(args)
    if code != 0:
        raise RuntimeError(f"genrm {' '.join(args[:2])} exited {code}: genrm {' '.join(args)}")


def _train(args: list[str], folder: Path, train_file: Path) -> None:
    """``genrm train ...`` into ``folder``, unless a run of the same command on the same ``train_file`` (by content:
    ``--inputs`` changes it under the same name) finished there. Both are saved beside the model once it is trained,
    so a study stopped after a stage goes on from it (a model is minutes to tens of minutes of CPU)."""
    done = folder / "study_command.json"
    record = _train_record(args, train_file)
    if done.exists() and json.loads(done.read_text()) == record and (folder / "log_history.json").exists():
        print(f"{folder}: kept from an earlier run of the same command on the same data")
        return
    _run(args)
    done.write_text(json.dumps(record))


def _table(
    model: str,
    data: Path,
    args: argparse.Namespace,
    out: Path,
    limit: int | None = None,
    answers: Path | None = None,
    grounding: str = "on",
) -> dict[str, float | None]:
    """The reliability table (percent per measure) of ``model`` on the first ``limit`` examples of ``data`` (default
    ``--eval-limit``; 0: all), decoded as ``--decoding`` says, its answers checked against the responses as
    ``grounding`` says
    (``genrm eval --grounding``); what was right in each answer to ``answers`` when given."""
    command = ["eval", str(data), "--judge", f"transformers:{model}", "--device", args.device, "--max-tokens", "400",
               *_decoding(args), "--answer-format", args.answer_format, "--json", str(out), "-q", *_batching(args),
               "--grounding", grounding, "--argument-threshold", str(args.argument_threshold)]  # fmt: skip
    limit = args.eval_limit if limit is None else limit
    command += ["--limit", str(limit)] if limit else []
    command += ["--answers", str(answers)] if answers else []
    _run(command)
    return {row["measure"]: row["percent"] for row in json.loads(out.read_text())["rows"]}


def _rlvr_prompts(sft: Path, data: Path, args: argparse.Namespace, root: Path) -> tuple[Path, dict[str, Any]]:
    """The train examples RLVR is run on: all of them, or (``--rlvr-prompts hard``) those of the first
    ``--rlvr-pool`` the SFT judge gets wrong (``genrm eval --answers``, then ``genrm data hard``): a prompt it gets
    right has every sample scored alike, and no gradient. Returns the file and how it was picked."""
    train = data / "train.jsonl"
    if args.rlvr_prompts == "all":
        return train, {"prompts": "all", "count": _lines(train)}
    answers, hard = root / "sft-train-answers.jsonl", root / "rlvr-prompts.jsonl"
    table = _table(str(sft), train, args, root / "sft-train.eval.json", args.rlvr_pool, answers)
    _run(["data", "hard", str(train), "--answers", str(answers), "-o", str(hard)])
    return hard, {"prompts": "hard", "pool": _lines(answers), "count": _lines(hard),
                  "sft_sample_level": table["Sample-level"]}  # fmt: skip


def _batching(args: argparse.Namespace) -> list[str]:
    """The evaluation's batch options: ``--eval-batch`` prompts decoded together, from as many inputs at once (an
    input's group holds a few responses)."""
    return ["--max-batch-size", str(args.eval_batch), "--concurrency", str(args.eval_batch)]


def _decoding(args: argparse.Namespace) -> list[str]:
    """The evaluation's decoding option: free (what the judge writes on its own), or constrained to the answer's
    grammar, as a served judge's (its evidence quotes free, and checked after)."""
    return ["--unconstrained"] if args.decoding == "free" else []


def _lines(path: Path) -> int:
    return len(read_jsonl_lines(path))


def _master_key_fp(
    model: str, audit: Path, args: argparse.Namespace, out: Path, grounding: str = "on"
) -> dict[str, float | int | None]:
    """How ``model`` pays the held-out keys' responses of ``audit`` (only those are judged): the share (percent) given
    any undeserved credit, how many of their criteria failed to be judged (a failure is never credit, so a judge
    whose answers do not read pays nothing: the count says whether a low share means anything), and how many of its
    values and quotes were not in the response (``genrm audit run --grounding``: paid anyway under ``off``)."""
    _run(["audit", "run", str(audit), "-o", str(out), "--backend", "transformers", "--model", model, "--device",
          args.device, "--settings", "default", "--max-tokens", "400", *_decoding(args), "--answer-format",
          args.answer_format, "-q", *_batching(args), "--grounding", grounding])  # fmt: skip
    (setting,) = json.loads((out / "audit.json").read_text())["settings"]
    rows = [row for row in setting["master_keys"] if row["category"] in args.held_out_keys]
    total = sum(row["responses"] for row in rows)
    paid = 100.0 * sum(row["responses_with_fp"] for row in rows) / total if total else None
    return {"percent": paid, "responses": total, "failed_criteria": sum(row["failed"] for row in rows),
            "ungrounded": sum(row.get("ungrounded", 0) for row in rows)}  # fmt: skip


def _keys_audit(data: Path, keys: list[str]) -> Path:
    """The master-key responses of the held-out ``keys`` in the test split's audit, alone (the rest of the audit is
    not what this study measures, and judging it would take most of the study's time)."""
    lines = [line for line in read_jsonl_lines(data / "audit_test.jsonl")
             if (row := json.loads(line))["category"] == "master_key" and row["attack"] in keys]  # fmt: skip
    path = data / "audit_test_held_out_keys.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _history(run: Path) -> list[dict[str, Any]]:
    return json.loads((run / "log_history.json").read_text())


def _steps(run: Path) -> int:
    """The steps a run made (fewer than asked for when its time share ran out)."""
    return max((e.get("step", 0) for e in _history(run)), default=0)


def _seconds_per_step(run: Path) -> float:
    history = _history(run)
    final = next(e for e in reversed(history) if "train_runtime" in e)
    return final["train_runtime"] / max(e.get("step", 0) for e in history)


def _with_negatives(data: Path, share: float) -> None:
    """The train split with the audit's negatives, repeated until they are at least about ``share`` (0-1) of the
    examples (a short continuation sees too few of a small set to learn anything), and how they came out
    (``negatives.json``: their count, master keys among them, their share of the file)."""
    train = read_jsonl_lines(data / "train.jsonl")
    negatives = read_jsonl_lines(data / "negatives.jsonl")
    copies = max(1, round(share * len(train) / ((1 - share) * len(negatives)))) if negatives else 0
    (data / "train_plus_negatives.jsonl").write_text("\n".join(train + negatives * copies) + "\n", encoding="utf-8")
    master_keys = sum("-master_key-" in json.loads(line)["id"] for line in negatives)
    facts = {"negatives": len(negatives), "master_keys": master_keys, "copies": copies,
             "share": len(negatives) * copies / (len(train) + len(negatives) * copies)}  # fmt: skip
    (data / "negatives.json").write_text(json.dumps(facts))


def _sft_train_file(data: Path, oversample: list[list[Any]]) -> Path:
    """The file SFT trains on: the train split, or, with ``--oversample``, the train split with each named family's
    examples in it ``times`` times in all (``train_oversampled.jsonl``; the test split, the audit and RLVR's prompts
    keep the split as made, so the study's measures stay comparable with a run without it)."""
    train = data / "train.jsonl"
    if not oversample:
        return train
    times = dict(oversample)
    lines = read_jsonl_lines(train)
    extra = [line for line in lines for _ in range(times.get(synthetic_family(json.loads(line)["id"]) or "", 1) - 1)]
    text = "\n".join(lines + extra) + "\n"
    path = data / "train_oversampled.jsonl"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        # seeds side by side (--jobs) make it at once: each writes its own copy and swaps it in whole, so no
        # seed's trainer reads a file another is writing
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    return path


#: The settings the study's data depends on (the rest change only the models and what is measured).
DATA_SETTINGS = ("inputs", "held_out", "held_out_keys", "master_key_inputs", "negatives_share")


def _data(args: argparse.Namespace, out: Path) -> Path:
    """The study's data in ``out/data``: made, or kept when ``study_data.json`` there records the same settings."""
    data = out / "data"
    stamp = data / "study_data.json"
    settings = {key: getattr(args, key) for key in DATA_SETTINGS}
    if stamp.exists() and json.loads(stamp.read_text()) == settings:
        print(f"{data}: kept from an earlier run with the same data settings")
        return data
    stamp.unlink(missing_ok=True)
    _run(["data", "synthetic", "-o", str(data), "--inputs", str(args.inputs), "--held-out", *args.held_out, "-q"])
    _run(["audit", "build", str(data / "train.jsonl"), "-o", str(data / "audit_train.jsonl"),
          "--master-key-inputs", str(args.master_key_inputs[0])])  # fmt: skip
    _run(["data", "from-audit", str(data / "audit_train.jsonl"), "-o", str(data / "negatives.jsonl"), "--exclude",
          *args.held_out_keys, "--not-in", str(data / "test.jsonl")])  # fmt: skip
    _with_negatives(data, args.negatives_share)
    _run(["audit", "build", str(data / "test.jsonl"), "-o", str(data / "audit_test.jsonl"), "--master-key-inputs",
          str(args.master_key_inputs[1])])  # fmt: skip
    _keys_audit(data, args.held_out_keys)
    stamp.write_text(json.dumps(settings))
    return data


class Clock:
    """The study's deadline (``time.time()`` seconds, or None): whether a step may start, and the steps skipped."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline

    def share(self, fraction: float) -> list[str]:
        """``genrm train`` flags that stop a training run after ``fraction`` (0-1) of the time left (none without a
        deadline): a run started before the deadline must not spend the rest of the study's time."""
        if self.deadline is None:
            return []
        return ["--stop_after_s", f"{max(1.0, fraction * (self.deadline - time.time())):.0f}"]

    def allows(self, step: str, result: dict[str, Any]) -> bool:
        """Whether ``step`` may start now; named in ``result["skipped"]`` when it may not."""
        if self.deadline is not None and time.time() >= self.deadline:
            result.setdefault("skipped", []).append(step)
            print(f"budget spent: {step} skipped", flush=True)
            return False
        return True


def _seed(seed: int, data: Path, args: argparse.Namespace, out: Path, clock: Clock, save: Any) -> dict[str, Any]:
    """One seed's models, tables, curves and timings, step by step while ``clock`` allows; ``save`` is called with
    the result after every step (a study stopped by its budget keeps what it measured)."""
    root = out / f"seed-{seed}"
    base, sft, rlvr = root / "base", root / "sft", root / "rlvr"
    loop = {"continued": (root / "sft-continued", data / "train.jsonl"),
            "negatives": (root / "sft-negatives", data / "train_plus_negatives.jsonl")}  # fmt: skip
    result: dict[str, Any] = {"tables": {}, "curve": [], "whole_test": {}, "master_key_fp": {},
                              "seconds_per_step": {}, "skipped": [],
                              "negatives": json.loads((data / "negatives.json").read_text())}  # fmt: skip
    flags = ["--method_options", json.dumps({"answer_format": args.answer_format}), "--seed", str(seed),
             "--plot", "false"]  # fmt: skip
    # the device wins over the recipe's (a GPU recipe dry-run on the CPU: fp32, no bf16 autocast)
    flags += ["--use_cpu", "true", "--bf16", "false"] if args.device == "cpu" else ["--use_cpu", "false"]
    every = max(1, args.sft_steps // args.curve_points)
    sft_recipe = ["--config", str(args.sft_config), *flags]

    def table(stage: str, model: Path, split: str, name: str, key: str = "tables", limit: int | None = None) -> None:
        label = f"{stage} on {split}" + (" (whole)" if key == "whole_test" else "")
        if clock.allows(label, result):
            figures = _table(str(model), data / name, args, root / f"{stage}-{name}.{key}.eval.json", limit)
            result[key][stage if key == "whole_test" else f"{stage}|{split}"] = figures
            save(result)

    # 1. SFT, with the checkpoints of its learning curve
    if not clock.allows("SFT", result):
        return result
    _run(["tiny-model", str(base), "--seed", str(seed), "--hidden-size", str(args.hidden_size), "--layers",
          str(args.layers), "--heads", str(args.heads), "--kv-heads", str(args.kv_heads),
          *(["--intermediate-size", str(args.intermediate_size)] if args.intermediate_size else [])])  # fmt: skip
    sft_train = _sft_train_file(data, args.oversample)
    _train(["train", "sft", *sft_recipe, "--model_name_or_path", str(base), "--train_file", str(sft_train),
            "--output_dir", str(sft), "--max_steps", str(args.sft_steps), "--logging_steps", str(max(1, every // 2)),
            "--save_strategy", "steps", "--save_steps", str(every), "--save_total_limit", "100",
            "--save_only_model", "true", *clock.share(0.4)], sft, sft_train)  # fmt: skip
    result["sft_loss"] = [(e["step"], e["loss"]) for e in _history(sft) if "loss" in e]
    result["seconds_per_step"]["SFT"] = _seconds_per_step(sft)
    result["steps_done"] = {"SFT": _steps(sft)}
    save(result)
    # 2. the curve: each checkpoint's criterion-level accuracy on the test split
    curve = [] if "curve" in args.skip else sorted(sft.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    for checkpoint in curve:
        if clock.allows(f"curve {checkpoint.name}", result):
            figures = _table(str(checkpoint), data / "test.jsonl", args, root / f"{checkpoint.name}.eval.json")
            result["curve"].append((int(checkpoint.name.split("-")[1]), figures["Criterion-level"]))
            save(result)
    # 3. RLVR from the SFT judge, on the train examples it gets wrong
    if "rlvr" not in args.skip and clock.allows("RLVR", result):
        prompts, result["rlvr_prompts"] = _rlvr_prompts(sft, data, args, root)
        _train(["train", "rlvr", "--config", str(args.rlvr_config), "--model_name_or_path", str(sft), "--train_file",
                str(prompts), "--output_dir", str(rlvr), "--max_steps", str(args.rlvr_steps), "--learning_rate",
                str(args.rlvr_lr), "--logging_steps", "2", "--save_strategy", "no", *flags, *clock.share(0.4)], rlvr,
               prompts)  # fmt: skip
        logged = [e for e in _history(rlvr) if "loss" in e]
        result["rlvr_rewards"] = [(e["step"], e.get(FORMAT_REWARD), e.get(CONTENT_REWARD)) for e in logged]
        result["rlvr_no_spread"] = [(e["step"], e.get(NO_SPREAD)) for e in logged]
        result["seconds_per_step"]["RLVR"] = _seconds_per_step(rlvr)
        result["steps_done"]["RLVR"] = _steps(rlvr)
        save(result)
    trained = [("SFT", sft)] + ([("RLVR", rlvr)] if "rlvr_prompts" in result else [])
    # 4. the tables: SFT and RLVR first (what was learned), base after (what it started from); then RLVR against its
    # own start on the whole test split, example by example (a gain of a point is within the noise of --eval-limit
    # examples, not of a paired comparison on every criterion)
    for stage, model in [*trained, *([] if "base" in args.skip else [("base", base)])]:
        for split, name in SPLITS.items():
            table(stage, model, split, name)
    if len(trained) == 2 and "whole" not in args.skip:
        for stage, model in trained:
            table(stage, model, "test", "test.jsonl", key="whole_test", limit=0)
    # 5. the audit's loop: the SFT judge continued on the train split alone and with the negatives (same steps and
    # rate: only the data differ), and the held-out master keys each judge pays
    audit = data / "audit_test_held_out_keys.jsonl"
    if clock.allows("master keys (SFT)", result):
        result["master_key_fp"]["before"] = _master_key_fp(str(sft), audit, args, root / "audit-before")
        result["master_key_fp"]["before"]["criterion_level"] = (
            result["tables"].get("SFT|test", {}).get("Criterion-level")
        )
        save(result)
    # 6. grounded extraction: each trained judge's master keys and test split again, nothing checked against the
    # response (off) and its values alone (values; the same as on unless the judge quotes evidence); the SFT judge's
    # figures above are the default, on, and the RLVR judge's keys are measured under it here
    for stage, model in trained:
        # (the SFT judge's keys under the default are step 5's; its files keep their first names)
        prefix = "" if stage == "SFT" else f"{stage}-"
        arms = ["off", *(["values"] if quotes_evidence(args.answer_format) else [])]
        arms += [] if stage == "SFT" else ["on"]
        for grounding in arms:
            if clock.allows(f"grounding {grounding} ({stage})", result):
                keys = _master_key_fp(str(model), audit, args, root / f"{prefix}audit-grounding-{grounding}",
                                      grounding)  # fmt: skip
                if grounding != "on":
                    table_file = root / f"{stage}-test.grounding-{grounding}.json"
                    keys["table"] = _table(str(model), data / "test.jsonl", args, table_file, grounding=grounding)
                result.setdefault(_GROUNDING_KEYS[stage], {})[grounding] = keys
                save(result)
    for arm, (folder, train_file) in ({} if "loop" in args.skip else loop).items():
        if not clock.allows(f"master keys ({_ARM_NAMES[arm]})", result):
            continue
        # (always trained again: the negatives' file is rebuilt with the data, under the same name)
        _run(["train", "sft", *sft_recipe, "--model_name_or_path", str(sft), "--train_file", str(train_file),
              "--output_dir", str(folder), "--max_steps", str(args.loop_steps), "--learning_rate", str(args.loop_lr),
              "--warmup_steps", "0", "--logging_steps", "10", "--save_strategy", "no", *clock.share(0.3)])  # fmt: skip
        keys = _master_key_fp(str(folder), audit, args, root / f"audit-{arm}")
        keys["criterion_level"] = _table(str(folder), data / "test.jsonl", args,
                                         root / f"{arm}-test.eval.json")["Criterion-level"]  # fmt: skip
        result["master_key_fp"][arm] = keys
        save(result)
    return result


#: What a run's settings may differ in and still share its seeds' figures (where they go, how they are scheduled).
_NOT_SETTINGS = ("seeds", "out", "results", "quick", "jobs", "budget_s", "deadline", "seed_only")


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    settings = {k: _relative(v) for k, v in vars(args).items() if k not in _NOT_SETTINGS}
    if not settings["oversample"]:
        del settings["oversample"]  # seeds recorded before the option existed were run without it: still theirs
    return settings


def _saved_seed(seed: int, args: argparse.Namespace) -> dict[str, Any] | None:
    """``{"result", "complete"}`` of ``seed`` from ``seed-N.json`` in ``--results``, when it was run with these
    settings; else None."""
    path = Path(args.results) / f"seed-{seed}.json"
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    return saved if saved["settings"] == _settings(args) else None


def _kept_seed(seed: int, data: Path, args: argparse.Namespace, out: Path, clock: Clock) -> dict[str, Any]:
    """One seed's results: read back from ``seed-N.json`` in ``--results`` when a run with the same settings finished
    it (a study cut short goes on where it stopped), run otherwise (saved after every step)."""
    saved = _saved_seed(seed, args)
    if saved is not None and saved.get("complete", True):
        print(f"seed {seed}: kept from {Path(args.results) / f'seed-{seed}.json'}")
        return saved["result"]
    path = Path(args.results) / f"seed-{seed}.json"

    def save(result: dict[str, Any], complete: bool = False) -> None:
        record = {"settings": _settings(args), "complete": complete, "result": result}
        path.write_text(json.dumps(record, indent=1))

    result = _seed(seed, data, args, out, clock, save)
    save(result, complete=not result["skipped"])
    return result


def _seeds_side_by_side(args: argparse.Namespace, deadline: float | None) -> dict[int, dict[str, Any]]:
    """Every seed in a process of its own, ``--jobs`` at a time, on the one device; the report rewritten from their
    ``seed-N.json`` as they go. Returns each seed's result (as far as it got)."""
    argv = list(sys.argv[1:])
    pending, running, results = list(args.seeds), {}, {}
    threads = max(1, (os.cpu_count() or 2) // args.jobs)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    logs = Path(args.results)
    # a stop from outside (a time limit's SIGTERM) ends the seeds' processes too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        while pending or running:
            while pending and len(running) < args.jobs:
                seed = pending.pop(0)
                command = [sys.executable, str(Path(__file__).resolve()), *argv, "--seeds", str(seed), "--jobs", "1",
                           "--seed-only", "--results", str(args.results)]  # fmt: skip
                if deadline is not None:
                    command += ["--deadline", str(deadline)]
                log = open(logs / f"seed-{seed}.log", "w")  # noqa: SIM115 (closed when the process ends)
                running[seed] = (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env), log)
            time.sleep(5)
            for seed, (process, log) in list(running.items()):
                if process.poll() is not None:
                    log.close()
                    del running[seed]
                    print(f"seed {seed}: process ended with exit code {process.returncode}", flush=True)
            for seed in args.seeds:
                saved = _saved_seed(seed, args)
                if saved is not None:
                    results[seed] = saved["result"]
            if results:
                _write(dict(sorted(results.items())), args)
    finally:  # stopped (an error, ^C): no seed's process outlives the study
        for process, log in running.values():
            process.terminate()
            process.wait()
            log.close()
    return dict(sorted(results.items()))


def _train_record(args: list[str], train_file: Path) -> dict[str, Any]:
    """What makes a trained stage the same: its command (paths inside the project relative to it, so that a copy of
    the project in another folder keeps the stage), the train file's content and the recipe's."""
    record = {"command": [_relative(arg) for arg in args],
              "train_file_sha256": hashlib.sha256(train_file.read_bytes()).hexdigest()}  # fmt: skip
    if "--config" in args:
        recipe = Path(args[args.index("--config") + 1])
        record["recipe_sha256"] = hashlib.sha256(recipe.read_bytes()).hexdigest()
    return record


def _relative(value: Any) -> Any:
    """A path inside the project as relative to it (results name no machine's folders); anything else as it is."""
    if isinstance(value, (str, Path)) and Path(value).is_absolute():
        try:
            return str(Path(value).resolve().relative_to(_ROOT))
        except ValueError:
            return str(value)
    return str(value) if isinstance(value, Path) else value


def _write(results: dict[int, dict[str, Any]], args: argparse.Namespace) -> str:
    """The report, the JSON and the figure of the seeds in ``results``, in ``--results``; returns the report."""
    out = Path(args.results)
    report = _report(results, args)
    (out / "judge_learning.md").write_text(report + "\n", encoding="utf-8")
    record = {"settings": {key: _relative(value) for key, value in vars(args).items()}, "results": results}
    (out / "judge_learning.json").write_text(json.dumps(record, indent=1, default=str))
    _figure(results, out / "judge_learning.png")
    return report


def _spread(values: list[float | None]) -> tuple[float | None, float | None]:
    known = [v for v in values if v is not None]
    if not known:
        return None, None
    return statistics.fmean(known), statistics.pstdev(known) if len(known) > 1 else 0.0


def _cell(values: list[float | None]) -> str:
    mean, spread = _spread(values)
    return "n/a" if mean is None else f"{mean:.1f} ± {spread:.1f}"


def _report(results: dict[int, dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"Judge learning: {args.inputs} inputs, held-out families {', '.join(args.held_out)}, seeds "
        f"{', '.join(map(str, results))}, {args.hidden_size}-wide {args.layers}-layer judge, SFT "
        f"{args.sft_steps} steps"
        f"{''.join(f', {family} examples {times} times as often' for family, times in args.oversample)}, RLVR "
        f"{args.rlvr_steps} steps, format {args.answer_format}, {args.decoding} "
        f"decoding, device {args.device}, values right at a verifier score of at least {args.argument_threshold:g}; "
        "percent, mean ± spread over seeds",
        "",
    ]
    for split in SPLITS:
        head = "| measure | " + " | ".join(STAGES) + " |"
        lines += [f"**{split}**", "", head, "|---" + "|---:" * len(STAGES) + "|"]
        for measure in MEASURES:
            cells = [_cell([r["tables"].get(f"{stage}|{split}", {}).get(measure) for r in results.values()])
                     for stage in STAGES]  # fmt: skip
            lines.append(f"| {measure} | " + " | ".join(cells) + " |")
        lines.append("")
    negatives = next(iter(results.values()))["negatives"]  # the data, so the same for every seed
    responses = next((r["master_key_fp"]["before"]["responses"] for r in results.values()
                      if "before" in r["master_key_fp"]), "n/a")  # fmt: skip
    lines += [f"Master keys held out of the negatives ({', '.join(args.held_out_keys)}; {responses} responses per "
              "judge): responses paid (any undeserved credit), criteria not judged (all seeds), criterion-level on "
              f"the test split; the SFT judge, then continued {args.loop_steps} steps at {args.loop_lr:g} on the "
              f"train split alone and with the audit's {negatives['negatives']} negatives "
              f"({negatives['master_keys']} of them master-key responses; {negatives['share']:.0%} of the examples)",
              "",
              "| judge | paid | not judged | criterion-level |", "|---|---:|---:|---:|"]  # fmt: skip
    for arm in ARMS:
        rows = [r["master_key_fp"][arm] for r in results.values() if arm in r["master_key_fp"]]
        lines.append(f"| {_ARM_NAMES[arm]} | {_cell([row['percent'] for row in rows])} | "
                     f"{sum(row['failed_criteria'] for row in rows) if rows else 'n/a'} | "
                     f"{_cell([row['criterion_level'] for row in rows])} |")  # fmt: skip
    lines += ["", "Grounded extraction (each trained judge): held-out master-key responses paid, their values and "
              "quotes not found in the response, and on the test split criterion-level and the share of extracted "
              "values found in the response; grounding off pays a value wherever it matches the target and a "
              "fuzzy credit as given, values pays a value only where the response states it, on (the default) also "
              "a fuzzy credit only with a quote of the response under the evidence format (the same as values "
              "otherwise)",
              "",
              "| judge | grounding | keys paid | values and quotes not in the response | criterion-level | "
              "values grounded |",
              "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for stage in _grounding_stages(results):
        for name in GROUNDING_ARMS:
            rows = [_grounding_arm(r, name, stage) for r in results.values()]
            rows = [row for row in rows if row is not None]
            lines.append(f"| {stage} | {name} | {_cell([row['percent'] for row in rows])} | "
                         f"{sum(row.get('ungrounded', 0) for row in rows) if rows else 'n/a'} | "
                         f"{_cell([row['table'].get('Criterion-level') for row in rows])} | "
                         f"{_cell([row['table'].get('Grounded') for row in rows])} |")  # fmt: skip
    lines.append("")
    for stage in ("SFT", "RLVR"):
        done = [str(r.get("steps_done", {}).get(stage, "none")) for r in results.values()]
        lines.append(f"{stage}: {_cell([r['seconds_per_step'].get(stage) for r in results.values()])} s/step; steps "
                     f"made per seed: {', '.join(done)}")  # fmt: skip
    no_spread = [_spread([100 * v for _, v in r.get("rlvr_no_spread", []) if v is not None])[0]
                 for r in results.values()]  # fmt: skip
    lines.append(
        f"RLVR groups whose samples all got the same reward (no gradient), mean over steps: {_cell(no_spread)}"
    )
    picked = [r["rlvr_prompts"] for r in results.values() if "rlvr_prompts" in r]
    if not picked:
        lines.append("RLVR prompts: no seed reached RLVR")
    elif args.rlvr_prompts == "hard":
        lines.append(
            "RLVR prompts: the train examples the SFT judge got wrong, per seed: "
            + ", ".join(
                f"{p['count']} of {p['pool']} (its sample-level there {p['sft_sample_level']:.1f}%)" for p in picked
            )
        )
    else:
        lines.append(f"RLVR prompts: the whole train split ({picked[0]['count']} examples)")
    lines += ["", "RLVR against its SFT start on the whole test split (every example; percent):", "",
              "| seed | criterion-level SFT | RLVR | RLVR - SFT | sample-level SFT | RLVR | RLVR - SFT |",
              "|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for seed, result in results.items():
        if _gain(result) is None:
            lines.append(f"| {seed} | not measured | | | | | |")
            continue
        cells = []
        for measure in ("Criterion-level", "Sample-level"):
            sft, rlvr = (result["whole_test"][stage][measure] for stage in ("SFT", "RLVR"))
            cells += [f"{sft:.1f}", f"{rlvr:.1f}", f"{rlvr - sft:+.1f}"]
        lines.append(f"| {seed} | " + " | ".join(cells) + " |")
    gains = [_gain(r) for r in results.values()]
    lines.append(f"| mean ± spread | | | {_cell(gains)} | | | |")
    skipped = {seed: r["skipped"] for seed, r in results.items() if r.get("skipped")}
    if skipped:
        lines += ["", "Skipped for the budget: " + "; ".join(f"seed {seed}: {', '.join(steps)}"
                                                             for seed, steps in skipped.items())]  # fmt: skip
    return "\n".join(lines)


#: The grounding settings measured (``genrm.choices.Grounding``): nothing checked, the values alone, and the default.
GROUNDING_ARMS = ("off", "values", "on")


#: Where a seed's result keeps each trained judge's grounding arms (the SFT judge's under its first name).
_GROUNDING_KEYS = {"SFT": "grounding", "RLVR": "rlvr_grounding"}


def _grounding_stages(results: dict[int, dict[str, Any]]) -> tuple[str, ...]:
    """The trained judges whose grounding arms some seed measured: SFT, and RLVR where it ran."""
    return tuple(stage for stage, key in _GROUNDING_KEYS.items()
                 if stage == "SFT" or any(key in r for r in results.values()))  # fmt: skip


def _grounding_arm(result: dict[str, Any], name: str, stage: str = "SFT") -> dict[str, Any] | None:
    """A seed's master keys and test-split table of the ``stage`` judge (SFT or RLVR) under grounding ``name`` (None
    if not measured). Under ``on`` the table is the stage's own test table, measured under the default."""
    if name == "on" and stage == "SFT":
        keys = result["master_key_fp"].get("before")
    else:
        keys = result.get(_GROUNDING_KEYS[stage], {}).get(name)
    if keys is None:
        return None
    return {**keys, "table": result["tables"].get(f"{stage}|test", {})} if name == "on" else keys


def _gain(result: dict[str, Any], measure: str = "Criterion-level") -> float | None:
    """RLVR's points over its SFT start on the whole test split (None where either was not measured)."""
    whole = result.get("whole_test", {})
    if "RLVR" not in whole or "SFT" not in whole:
        return None
    return whole["RLVR"][measure] - whole["SFT"][measure]


def _running_mean(values: list[float | None], window: int) -> list[float]:
    """The mean of each value and the ``window - 1`` before it (fewer at the start; a missing value is skipped, and
    NaN, which a plot leaves blank, where none is known)."""
    means = []
    for end in range(1, len(values) + 1):
        known = [v for v in values[max(0, end - window) : end] if v is not None]
        means.append(statistics.fmean(known) if known else math.nan)
    return means


def _figure(results: dict[int, dict[str, Any]], path: Path) -> None:
    from genrm.figures import pyplot, save

    plt = pyplot()
    figure, (loss, rewards, accuracy) = plt.subplots(1, 3, figsize=(15, 4))
    window = 1
    for seed, result in results.items():
        if result.get("sft_loss"):
            loss.plot(*zip(*result["sft_loss"], strict=True), label=f"seed {seed}")
        if not result.get("rlvr_rewards"):
            if result["curve"]:
                accuracy.plot(*zip(*result["curve"], strict=True), marker="o", label=f"seed {seed}")
            continue
        steps = [s for s, _, _ in result["rlvr_rewards"]]
        # a step's batch is a few prompts, so its mean swings from 0 to 1: a running mean shows the trend
        window = max(1, len(steps) // 12)
        rewards.plot(steps, _running_mean([f for _, f, _ in result["rlvr_rewards"]], window), color=f"C{seed}",
                     label=f"format, seed {seed}")  # fmt: skip
        rewards.plot(steps, _running_mean([c for _, _, c in result["rlvr_rewards"]], window), "--", color=f"C{seed}",
                     label=f"content, seed {seed}")  # fmt: skip
        rewards.plot([s for s, _ in result["rlvr_no_spread"]],
                     _running_mean([v for _, v in result["rlvr_no_spread"]], window), ":", color=f"C{seed}",
                     label=f"no spread, seed {seed}")  # fmt: skip
        if result["curve"]:
            accuracy.plot(*zip(*result["curve"], strict=True), marker="o", label=f"seed {seed}")
    for axes, title in ((loss, "SFT train loss"),
                        (rewards, f"RLVR rewards, groups with no spread (mean of {window} logs)"),
                        (accuracy, "criterion-level accuracy, test split (%)")):  # fmt: skip
        axes.set_title(title)
        axes.set_xlabel("step")
        if axes.get_legend_handles_labels()[0]:  # a step the budget skipped drew nothing
            axes.legend(fontsize=7)
    save(figure, path)


def _oversampled(parser: argparse.ArgumentParser, family: str, times: str) -> list[Any]:
    """One ``--oversample FAMILY TIMES`` checked: a known family, a whole number of times from 1."""
    if family not in SYNTHETIC_FAMILIES:
        parser.error(f"--oversample: unknown task family {family!r:.40}; known: {', '.join(SYNTHETIC_FAMILIES)}")
    if not times.isdigit() or int(times) < 1:
        parser.error(f"--oversample {family}: TIMES must be a whole number from 1, not {times!r:.40}")
    return [family, int(times)]  # a list, as the settings read back from JSON hold it


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=2000, help="synthetic inputs (2000)")
    parser.add_argument("--held-out", nargs="+", default=["grounding"], help="families held out (grounding)")
    parser.add_argument("--held-out-keys", nargs="+", default=["period", "comma", "colon", "solution_ja"],
                        help="master keys left out of the negatives, measured after training")  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sft-steps", type=int, default=600)
    parser.add_argument("--rlvr-steps", type=int, default=40)
    parser.add_argument("--rlvr-lr", type=float, default=3e-4, help="RLVR learning rate (3e-4, the tiny recipe's)")
    parser.add_argument("--rlvr-prompts", choices=["hard", "all"], default="hard",
                        help="RLVR on the train examples the SFT judge gets wrong (hard), or on all")  # fmt: skip
    parser.add_argument("--rlvr-pool", type=int, default=0,
                        help="train examples the SFT judge answers to find the hard ones (0: all)")  # fmt: skip
    parser.add_argument("--loop-steps", type=int, default=200, help="SFT steps of the audit loop's continuations")
    parser.add_argument("--loop-lr", type=float, default=3e-4, help="their learning rate (3e-4)")
    parser.add_argument("--negatives-share", type=float, default=0.25, help="the negatives' least share there (0.25)")
    parser.add_argument("--master-key-inputs", type=int, nargs=2, default=[2, 2], metavar=("TRAIN", "TEST"),
                        help="inputs each master key is tried on in the train and the test audit (2 2)")  # fmt: skip
    parser.add_argument(
        "--oversample",
        nargs=2,
        action="append",
        default=[],
        metavar=("FAMILY", "TIMES"),
        help="SFT sees FAMILY's train examples TIMES times as often (repeatable; none by default)",
    )
    parser.add_argument("--hidden-size", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4, help="query heads, each hidden-size / heads wide (4)")
    parser.add_argument("--kv-heads", type=int, default=2, help="key-value heads (2)")
    parser.add_argument("--intermediate-size", type=int, default=0, help="the MLP's width (0: twice --hidden-size)")
    parser.add_argument("--sft-config", type=Path, default=_ROOT / "recipes" / "sft_tiny_cpu.yaml",
                        help="the SFT recipe (and the audit loop's); default: the tiny CPU one")  # fmt: skip
    parser.add_argument("--rlvr-config", type=Path, default=_ROOT / "recipes" / "rlvr_tiny_cpu.yaml",
                        help="the RLVR recipe; default: the tiny CPU one")  # fmt: skip
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--eval-batch", type=int, default=16,
                        help="prompts an evaluation decodes together (16; more on a GPU)")  # fmt: skip
    parser.add_argument("--budget-s", type=float, default=0,
                        help="start no step after this many s (0: no budget); what is skipped is named")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="seeds run side by side, a process each (1)")
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)  # a seed's process: the study's deadline
    parser.add_argument("--seed-only", action="store_true", help=argparse.SUPPRESS)  # a seed's process: no report
    parser.add_argument("--curve-points", type=int, default=10, help="SFT checkpoints on the learning curve (10)")
    parser.add_argument("--eval-limit", type=int, default=200, help="examples per evaluation (0: all)")
    parser.add_argument("--argument-threshold", type=score_threshold, default=0.9,
                        help="verifier score, in (0, 1], at or above which an extracted value counts as right in "
                        "the tables (0.9, genrm eval's; 1.0: the label's value only)")  # fmt: skip
    parser.add_argument("--decoding", choices=["free", "constrained"], default="free",
                        help="evaluations decode freely (what the judge writes on its own), or under the answer's "
                        "grammar, as a served judge does (evidence quotes free, and checked after)")  # fmt: skip
    parser.add_argument(
        "--answer-format",
        choices=SCORING_FORMATS,
        default="brief",
        help="the judge's format version, trained and asked for (brief: the short system prompt)",
    )
    parser.add_argument("--out", default=str(_ROOT / "runs" / "judge-learning"))
    parser.add_argument(
        "--results", help="where the report and each seed's figures go (default: --out); models and data stay in --out"
    )
    parser.add_argument("--skip", nargs="+", default=[], choices=["curve", "rlvr", "base", "loop", "whole"],
                        help="steps left out: the learning curve, RLVR, the base judge's tables, the audit's "
                        "loop, RLVR against SFT on the whole test split")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="a few steps and examples: checks that the study runs")
    args = parser.parse_args()
    if args.quick:
        args.inputs, args.seeds, args.sft_steps, args.rlvr_steps, args.eval_limit = 60, args.seeds[:2], 10, 2, 8
        args.loop_steps, args.master_key_inputs = 4, [1, 1]
    args.oversample = [_oversampled(parser, family, times) for family, times in args.oversample]
    if held_out := sorted({family for family, _ in args.oversample} & set(args.held_out)):
        parser.error(f"--oversample {held_out[0]}: that family is held out of training (--held-out)")
    for recipe in (args.sft_config, args.rlvr_config):
        if not recipe.is_file():
            parser.error(f"no recipe at {recipe}")
    out = Path(args.out)
    args.results = args.results or args.out
    for folder in (out, Path(args.results)):
        folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    deadline = args.deadline or (time.time() + args.budget_s if args.budget_s else None)
    data = _data(args, out)
    clock = Clock(deadline)
    if args.seed_only:
        for seed in args.seeds:
            _kept_seed(seed, data, args, out, clock)
        return 0
    results: dict[int, dict[str, Any]] = {}
    if args.jobs > 1:
        results = _seeds_side_by_side(args, deadline)
        if not results:
            print("judge_learning: no seed finished a step (see seed-N.log in --results)", file=sys.stderr)
            return 1
    else:
        for seed in args.seeds:
            results[seed] = _kept_seed(seed, data, args, out, clock)
            _write(results, args)  # after every seed: a study cut short keeps the seeds it finished
    report = _write(results, args)
    print(report)

    def mean(key: str, stage: str, split: str = "test") -> str:
        value = _spread([r["tables"].get(f"{stage}|{split}", {}).get(key) for r in results.values()])[0]
        return "n/a" if value is None else f"{value:.1f}%"

    def grounding(stage: str) -> str:
        arms = {name: [_grounding_arm(r, name, stage) or {} for r in results.values()] for name in GROUNDING_ARMS}
        paid = " / ".join(_cell([row.get("percent") for row in rows]) for rows in arms.values())
        level = " / ".join(_cell([row.get("table", {}).get("Criterion-level") for row in rows])
                           for rows in arms.values())  # fmt: skip
        return f"grounding off / values / on ({stage}): keys paid {paid}%, criterion-level {level}%; "

    fp = {arm: _spread([r["master_key_fp"].get(arm, {}).get("percent") for r in results.values()])[0]
          for arm in ARMS}  # fmt: skip
    shown = {arm: "n/a" if v is None else f"{v:.1f}%" for arm, v in fp.items()}
    print(f"summary: criterion-level on held-out inputs base {mean('Criterion-level', 'base')} -> SFT "
          f"{mean('Criterion-level', 'SFT')} -> RLVR {mean('Criterion-level', 'RLVR')} (held-out families: SFT "
          f"{mean('Criterion-level', 'SFT', 'held-out families')}, RLVR "
          f"{mean('Criterion-level', 'RLVR', 'held-out families')}); sample-level SFT {mean('Sample-level', 'SFT')}; "
          f"RLVR - SFT on the whole test split {_cell([_gain(r) for r in results.values()])} points; "
          f"held-out master keys paid {shown['before']} (SFT), {shown['continued']} (continued), "
          f"{shown['negatives']} (continued with the audit's negatives); "
          f"{''.join(grounding(stage) for stage in _grounding_stages(results))}"
          f"{len(results)} seeds, {time.perf_counter() - started:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
