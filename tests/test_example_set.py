"""The shipped example set: its coverage, and the rewards the rule backend gives each kind of response."""

import json
from collections import Counter

import pytest
from conftest import EXAMPLE_SET

from genrm.methods.rubric.answer_extraction import final_answer_span
from genrm.methods.rubric.method import score_instance
from genrm.methods.rubric.planning import plan_rubric
from verifiers.registry import REGISTRY

EXPECTED = {
    row["id"]: row["expect"]
    for row in map(json.loads, EXAMPLE_SET.with_name("reward_core.expected.jsonl").read_text().splitlines())
}


def _reward_class(reward: float | None) -> str:
    if reward is None:
        return "unknown"
    return {1.0: "one", 0.0: "zero"}.get(reward, "between")


@pytest.fixture(scope="module")
def results(example_instances):
    return {instance.id: score_instance(instance) for instance in example_instances}


def test_coverage(example_instances):
    assert len(example_instances) >= 40
    assert len({i.id for i in example_instances}) == len(example_instances)
    assert set(EXPECTED) == {i.id for i in example_instances}
    used = Counter(p.verifier for i in example_instances for p in plan_rubric(i.rubric, i.task_type))
    assert set(REGISTRY) <= set(used) and used[None] >= 5
    assert all(used[name] >= 4 for name in REGISTRY), used
    kinds = Counter(kind for expect in EXPECTED.values() for kind in expect)
    assert kinds["one"] >= 40 and kinds["between"] >= 20 and kinds["zero"] >= 80 and kinds["unknown"] >= 10


def test_rewards_by_kind(example_instances, results):
    for instance in example_instances:
        got = [_reward_class(r) for r in results[instance.id].rewards]
        assert got == EXPECTED[instance.id], (instance.id, results[instance.id].rewards)
        known = [r for r in results[instance.id].rewards if r is not None]
        # The first response is the right one: nothing in its group scores higher.
        if results[instance.id].rewards[0] is not None:
            assert results[instance.id].rewards[0] == max(known)


def test_hand_computed_rewards(results):
    # Two of three items (Hungarian match over exact strings / 3), alone in the rubric: remapped 2/3 in [0, 1].
    assert results["list-004"].rewards[1] == pytest.approx(2 / 3)
    # Time 1 (weight 3) and a point 50 away: 1 - 50/100 = 0.5 raw, remapped 0.5 over [0, 1] -> 3/4 + 0.5/4.
    assert results["mix-002"].rewards[1] == pytest.approx(0.875)
    # One box of two, IoU 60*196 / (60*200) = 0.98 -> 0.49 raw; the right response's two boxes give the maximum.
    box = results["box-002"].records
    assert box[1].criteria[0].score == pytest.approx(0.49)
    assert box[1].reward == pytest.approx(0.49 / box[0].criteria[0].score)
    # "EMERGENCV EXIT" misspells a word of nine letters once (a word that long may be): similarity 13/14.
    assert results["ocr-001"].rewards[1] == pytest.approx(13 / 14)


def test_every_no_answer_response_scores_zero(example_instances, results):
    without_span = 0
    for instance in example_instances:
        if len(EXPECTED[instance.id]) != 4:  # right, partly right, wrong, no final answer
            continue
        last = results[instance.id].records[3]
        assert last.reward == 0.0, instance.id
        if final_answer_span(instance.responses[3]) is None:
            without_span += 1
            assert all(c.extracted.endswith("(predict=None)") and c.status == "unparseable_pred"
                       for c in last.criteria if c.verifier)  # fmt: skip
    assert without_span >= 40
