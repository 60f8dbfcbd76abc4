"""What a rubric judge reads and writes, as texts to train a tokenizer on (the tiny judge of
:mod:`genrm.training.tiny_model`): each exposure's system prompt, scoring prompts and answers of the shipped example
set, and the synthetic judge-training split's prompts and labelled answers."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import get_args

from genrm.choices import SCORING_FORMATS
from genrm.jsonl import read_jsonl_lines
from genrm.methods.rubric.models import Instance
from genrm.methods.rubric.planning import plan_rubric
from genrm.methods.rubric.prompts import (
    Exposure,
    build_group_prompts,
    build_scoring_prompt,
    exposed_plans,
    scoring_system_prompt,
)
from genrm.methods.rubric.readers import GroupRequest, RuleReader


def _answer_json(request: GroupRequest) -> Iterator[str]:
    # Judge answers in the output format, so that the tokenizer has pieces for its keys and the verifier calls (the
    # rlr3 version, whose keys include the compact one's).
    for judgement in RuleReader().read_group(request):
        sections: dict[str, list[dict[str, object]]] = {"essential": [], "additional": []}
        for item in judgement.criteria:
            credit: object = item.call if item.call is not None else 0.5
            entry = {"criterion": item.plan.criterion.criterion, "rationale": item.rationale[:120], "credit": credit}
            sections[item.plan.section].append(entry)
        yield json.dumps({"thought": judgement.thought[:200], **sections}, ensure_ascii=False)


def judge_corpus(instances: Sequence[Instance] | None = None, synthetic_inputs: int = 240) -> Iterator[str]:
    """What a judge reads and writes: each exposure's system prompt, scoring prompts and answers for ``instances``,
    then the user messages and labelled answers of the synthetic training split (``synthetic_inputs`` inputs,
    generated here as ``genrm data synthetic`` does; 0 for none). ``instances`` defaults to
    :func:`example_instances`."""
    instances = example_instances() if instances is None else instances
    for exposure in get_args(Exposure):
        for answer_format in SCORING_FORMATS:
            yield scoring_system_prompt(exposure, answer_format)
    for instance in instances:
        plans = exposed_plans(plan_rubric(instance.rubric), "minimal")
        responses = list(instance.responses)
        for prompt in build_group_prompts(instance.prompt, plans, responses, "minimal", None):
            yield prompt.user
        request = GroupRequest(instance.prompt, plans, responses)
        yield from _answer_json(request)
    if synthetic_inputs:
        from genrm.methods.rubric.judge_data import labelled_answer
        from genrm.methods.rubric.synthetic import synthetic_splits

        train, _ = synthetic_splits(synthetic_inputs)
        for example in train:
            yield build_scoring_prompt(example.prompt, example.plans(), example.response).user
            yield json.dumps(labelled_answer(example), ensure_ascii=False)


def example_instances() -> list[Instance]:
    """The shipped example set (``datasets/examples/reward_core.jsonl``), the default tokenizer corpus."""
    path = Path(__file__).resolve().parents[3] / "datasets" / "examples" / "reward_core.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"the example set is not at {path}; pass a corpus of instances instead")
    return [Instance.model_validate_json(line) for line in read_jsonl_lines(path) if line]
