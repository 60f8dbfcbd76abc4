"""The rule judge on labelled real model answers (``benchmarks/data/gsm8k_model_answers.jsonl``: GPT-3 solutions of
GSM8K's test questions with the repository's own labels): it pays exactly the answers labelled correct."""

import json
from itertools import groupby
from pathlib import Path

from genrm.methods.rubric.method import score_instance
from genrm.methods.rubric.models import Instance
from verifiers import format_call

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "gsm8k_model_answers.jsonl"


def test_the_rule_judge_pays_exactly_the_real_answers_labelled_correct():
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 500
    wrong = []
    for question, group in groupby(rows, key=lambda row: row["question"]):
        group = list(group)
        reference = format_call("expr_verify", {"target": group[0]["gold"]})
        instance = Instance(id=f"gsm8k-{question}", prompt="Solve the problem.", task_type="general",
                            rubric={"essential": [{"criterion": "Gives the answer.", "reference": reference,
                                                   "weight": 1}]},
                            responses=[row["response"] for row in group])  # fmt: skip
        result = score_instance(instance)
        for row, reward, record in zip(group, result.rewards, result.records, strict=True):
            if reward != float(row["label"]):
                wrong.append((question, row["model"], row["label"], reward, record.criteria[0].reason))
    assert wrong == []
