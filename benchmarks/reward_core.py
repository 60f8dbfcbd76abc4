"""Reward-core throughput, the size of the judge's output, and how much of a group's scoring prompts is shared.

    python benchmarks/reward_core.py [--groups 300] [--all-cores]

1. **Throughput**: groups of G = 8 responses to one prompt with a rubric of 4 criteria (essential: a number checked
   by expr_verify, a box checked by bbox_verify; additional: a fuzzy credit, a text checked by text_verify). Judge
   outputs are JSON as a model writes them (a thought, a one-sentence rationale per criterion), with values that
   vary per group so that no cache flatters the figure. Timed: parsing each output, executing every criterion with
   the verifiers, the format checks, and the group's remapping and aggregation into records. The rule backend is
   timed the same way with responses in place of judge outputs. Pinned to one core by default.
2. **Output size**: characters and approximate tokens of the judge's output per criterion under the scoring schema,
   in each answer format (``compact``, the default; ``rlr3``, which copies each criterion; ``brief``, compact's answer
   under a short system prompt).
   Tokens are counted with the pre-tokenizer split of Qwen2-style BPE vocabularies (letters runs, single digits,
   punctuation runs): each piece is at least one token, so this is a lower bound that is close for English.
3. **Shared prefix**: the share of a group's scoring-prompt characters (system message + user message) that is
   identical for its G responses, over the shipped example set and over a group of 1,500-character responses.

Target: >= 2,000 responses/s for parse + execute + aggregate at G = 8 with 4 criteria, on one core.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from genrm.choices import DEFAULT_SCORING_FORMAT, SCORING_FORMATS, copies_criterion  # noqa: E402
from genrm.jsonl import read_jsonl_lines  # noqa: E402
from genrm.methods.rubric.judge_output import parse_judge_output  # noqa: E402
from genrm.methods.rubric.models import Instance, Rubric  # noqa: E402
from genrm.methods.rubric.planning import plan_rubric  # noqa: E402
from genrm.methods.rubric.prompts import build_scoring_prompt  # noqa: E402
from genrm.methods.rubric.readers import GroupRequest, RuleReader  # noqa: E402
from genrm.methods.rubric.scoring import score_group  # noqa: E402

G = 8
TARGET = 2_000.0
EXAMPLES = _HERE.parent / "datasets" / "examples" / "reward_core.jsonl"
_PIECES = re.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\w]?[^\W\d_]+|\d| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
rng = random.Random(0)


def approx_tokens(text: str) -> int:
    """Pieces of the Qwen2-style pre-tokenizer split: a lower bound on BPE tokens."""
    return len(_PIECES.findall(text))


def _box() -> list[int]:
    x, y = rng.randrange(0, 800), rng.randrange(0, 800)
    return [x, y, x + rng.randrange(40, 200), y + rng.randrange(40, 200)]


def _group() -> tuple[Instance, list[str]]:
    """One prompt with a 4-criterion rubric, G responses, and the judge output for each."""
    answer, box, word = rng.randrange(10, 10_000), _box(), rng.choice(["EXIT", "TOTAL REVENUE", "Bakery Rosalind"])
    rubric = Rubric.model_validate(
        {
            "essential": [
                {"criterion": "States the number of items.", "reference": f"expr_verify(target='{answer}')",
                 "weight": 3},
                {"criterion": "Gives the object's box.", "reference": f"bbox_verify(target=[{box}])", "weight": 2},
            ],
            "additional": [
                {"criterion": "Explains how the items were counted.", "reference": "Counted row by row", "weight": 1},
                {"criterion": "Reads the label on the object.", "reference": f"text_verify(target='{word}')",
                 "weight": 1},
            ],
        }
    )  # fmt: skip
    responses, outputs = [], []
    for _ in range(G):
        value = answer if rng.random() < 0.5 else answer + rng.randrange(1, 9)
        predicted = [v + rng.randrange(-15, 16) for v in box]
        label = word if rng.random() < 0.6 else word[:-1]
        responses.append(
            f"Counting row by row gives {value} items. The object is at {predicted} and its label reads {label}.\n"
            f"Final answer: {value}"
        )
        items = [
            ("States the number of items.", "The count is in the final line.", f"expr_verify(predict='{value}')"),
            ("Gives the object's box.", "The box follows 'at' in the second sentence.",
             f"bbox_verify(predict=[{predicted}])"),
            ("Explains how the items were counted.", "It says it counted row by row.", rng.choice([0, 0.5, 1])),
            ("Reads the label on the object.", "The label follows 'reads'.", f"text_verify(predict='{label}')"),
        ]  # fmt: skip
        judged = [{"rationale": r, "credit": k} for _, r, k in items]  # the default (compact) answer format
        outputs.append(json.dumps({"thought": "The response answers every part.", "essential": judged[:2],
                                   "additional": judged[2:]}))  # fmt: skip
    instance = Instance(id="bench", prompt="How many items are there, where is the object, what does it say?",
                        task_type="general", rubric=rubric, responses=responses)  # fmt: skip
    return instance, outputs


def _time_groups(groups: list[tuple[Instance, list[str]]], rule: bool) -> tuple[float, list[float]]:
    judge = RuleReader()
    per_group = []
    start = time.perf_counter()
    for instance, outputs in groups:
        t0 = time.perf_counter()
        plans = plan_rubric(instance.rubric, instance.task_type)
        if rule:
            judgements = judge.read_group(GroupRequest(instance.prompt, plans, instance.responses))
        else:
            judgements = [parse_judge_output(text, plans) for text in outputs]
        result = score_group(instance, plans, judgements)
        assert all(r is not None for r in result.rewards) or rule
        per_group.append(time.perf_counter() - t0)
    return time.perf_counter() - start, per_group


def _output_sizes() -> list[tuple[str, dict[str, tuple[int, int]]]]:
    """Characters and approximate tokens of one criterion's output item in each answer format, and of the JSON frame
    with a thought. Calls are written as the scoring schema allows them (single quotes, no backslash)."""
    rationale = "The value is stated in the final line of the response."
    items = {
        "fuzzy credit": 1,
        "expr_verify": "expr_verify(predict='3/4')",
        "text_verify": "text_verify(predict='EMERGENCY EXIT')",
        "time_verify": "time_verify(predict='6:40 PM', pformat='%I:%M %p')",
        "list_verify": "list_verify(predict=['Bergen', 'Voss', 'Flam'])",
        "bbox_verify": "bbox_verify(predict=[[529, 119, 890, 433]])",
        "point_verify": "point_verify(predict=[[589, 236]])",
    }
    rows = []
    for name, credit in items.items():
        sizes = {}
        for answer_format in SCORING_FORMATS:
            item = {"criterion": "Gives the bounding box of the dog."} if copies_criterion(answer_format) else {}
            text = json.dumps({**item, "rationale": rationale, "credit": credit})
            sizes[answer_format] = (len(text) + 2, approx_tokens(text) + 1)  # + the comma between items
        rows.append((name, sizes))
    frame = json.dumps({"thought": "The response answers every part.", "essential": [], "additional": []})
    rows.append(("frame + thought", {f: (len(frame), approx_tokens(frame)) for f in SCORING_FORMATS}))
    return rows


def _token_split() -> dict[str, int]:
    """Approximate tokens of each field of one rlr3 item (key, quotes and value), braces and commas apart."""
    fields = {"criterion": "Gives the bounding box of the dog.",
              "rationale": "The value is stated in the final line of the response.",
              "credit": "expr_verify(predict='3/4')"}  # fmt: skip
    split = {name: approx_tokens(json.dumps({name: value})[1:-1]) for name, value in fields.items()}
    split["braces, commas"] = approx_tokens(json.dumps(fields)) + 1 - sum(split.values())
    return split


def _shared_share(instances: list[Instance]) -> float:
    shared = total = 0
    for instance in instances:
        plans = plan_rubric(instance.rubric, instance.task_type)
        for response in instance.responses:
            prompt = build_scoring_prompt(instance.prompt, plans, response)
            shared += len(prompt.system) + len(prompt.shared_prefix)
            total += len(prompt.system) + len(prompt.user)
    return shared / total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=300, help="groups of 8 responses to time (default: 300)")
    parser.add_argument("--all-cores", action="store_true", help="do not pin the process to one core")
    args = parser.parse_args()
    if not args.all_cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    groups = [_group() for _ in range(args.groups)]
    _time_groups(groups[:10], rule=False)  # warm caches of imports and compiled patterns, not of values
    print(f"Throughput: G = {G}, 4 criteria (expr, bbox, fuzzy, text), {args.groups} groups, "
          f"{'all cores' if args.all_cores else 'one core'}")  # fmt: skip
    print(f"{'path':<34} {'responses/s':>12} {'group p50 ms':>13} {'group p99 ms':>13}")
    rates = {}
    for label, rule in (("judge output: parse+execute+agg", False), ("rule backend: extract+execute+agg", True)):
        seconds, per_group = _time_groups(groups, rule)
        rates[label] = len(groups) * G / seconds
        per_group.sort()
        p99 = per_group[min(len(per_group) - 1, int(0.99 * len(per_group)))]
        print(f"{label:<34} {rates[label]:>12,.0f} {statistics.median(per_group) * 1e3:>13.2f} {p99 * 1e3:>13.2f}")

    print("\nJudge output per criterion (one-sentence rationale; criterion text of 34 characters), per answer format")
    print(f"{'item':<16}" + "".join(f" {f + ' chars':>13} {f + ' ~tokens':>15}" for f in SCORING_FORMATS))
    sizes = _output_sizes()
    for name, by_format in sizes:
        print(f"{name:<16}" + "".join(f" {by_format[f][0]:>13} {by_format[f][1]:>15}" for f in SCORING_FORMATS))
    per_criterion = {
        f: statistics.mean(by_format[f][1] for name, by_format in sizes if name != "frame + thought")
        for f in SCORING_FORMATS
    }
    print(f"{'mean per criterion':<16}" + "".join(f" {'':>13} {per_criterion[f]:>15.1f}" for f in SCORING_FORMATS))
    print("where an rlr3 expr_verify item's ~tokens go: " + ", ".join(f"{k} {v}" for k, v in _token_split().items()))

    instances = [Instance.model_validate_json(line) for line in read_jsonl_lines(EXAMPLES)]
    example_share = _shared_share(instances)
    long_group = [instance.model_copy(update={"responses": ["x " * 750] * G}) for instance in instances[:10]]
    long_share = _shared_share(long_group)
    print("\nShared prefix of the scoring prompts (system + user, characters)")
    print(f"{'group':<40} {'shared':>7}")
    print(f"{'example set (responses as shipped)':<40} {example_share:>7.1%}")
    print(f"{'example rubrics, 1,500-char responses':<40} {long_share:>7.1%}")

    rate = rates["judge output: parse+execute+agg"]
    verdict = "met" if rate >= TARGET else "NOT met"
    print(f"\nsummary: {rate:,.0f} responses/s parse+execute+aggregate at G={G}, 4 criteria (target >= {TARGET:,.0f}: "
          f"{verdict}); ~{per_criterion[DEFAULT_SCORING_FORMAT]:.0f} output tokens per criterion "
          f"({DEFAULT_SCORING_FORMAT} answer format; rlr3 ~{per_criterion['rlr3']:.0f}); {example_share:.0%} of "
          f"prompt characters shared within a group ({long_share:.0%} with 1,500-char responses)")  # fmt: skip
    return 0 if rate >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
