"""The policy's rubric reward: judged where generated, remapped over whole groups, failures never a 0 or a 1."""

import json
import math

import pytest

from genrm.engine import Judge
from genrm.methods.rubric.aggregation import CriterionSlot, aggregate_group
from genrm.methods.rubric.models import Instance
from policy_rl.data import policy_record
from policy_rl.method_reward import INSTANCE_COLUMN, JudgeDown
from policy_rl.rubric_reward import LengthRule, Outcome, RubricReward, group_rewards
from policy_rl.scorers import JudgeScorer, make_scorer

INSTANCE = Instance(
    id="q1", prompt="What is 6 x 7? Put the answer in \\boxed{}.", task_type="math", reference_answer="\\boxed{42}",
    rubric={"essential": [{"criterion": "Gives the product.", "reference": "expr_verify(target='42')", "weight": 3}]},
)  # fmt: skip
OTHER = Instance(
    id="q2", prompt="Is snow cold? Answer yes or no.", task_type="general",
    rubric={"essential": [{"criterion": "Says the right word.", "reference": "text_verify(target='yes')",
                           "weight": 3}]},
)  # fmt: skip


def _column(*pairs):
    """Completions and their genrm_instance column, as TRL hands them to a reward function."""
    completions, instances = [], []
    for instance, texts in pairs:
        row = policy_record(instance)
        for text in texts:
            completions.append([{"role": "assistant", "content": text}])
            instances.append(row[INSTANCE_COLUMN])
    return completions, instances


def test_rewards_follow_the_method_over_each_group():
    reward = RubricReward(JudgeScorer(Judge()))
    completions, instances = _column((INSTANCE, ["\\boxed{42}", "\\boxed{41}", "\\boxed{42}", "no idea"]),
                                     (OTHER, ["yes", "yes"]))  # fmt: skip
    metrics, extra = {}, {}
    rewards = reward([None] * len(completions), completions, **{INSTANCE_COLUMN: instances},
                     log_metric=metrics.__setitem__, log_extra=extra.__setitem__)  # fmt: skip
    assert extra == {"rubric_criteria": ["[1.0]", "[0.0]", "[1.0]", "[0.0]", "[1.0]", "[1.0]"]}
    assert rewards == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]  # all passing in q2: both stay at the top
    assert metrics["rubric/judge_failed"] == 0 and metrics["rubric/raw_essential"] == pytest.approx(4 / 6)


def test_a_group_split_in_two_gets_different_rewards_than_the_whole_group():
    """Why the trainer recomputes over gathered groups: the remap depends on who else is in the group."""
    reward = RubricReward(JudgeScorer(Judge()))
    texts = ["yes", "yess", "no", "nope"]  # raw text similarities 1, 0.86, 0, 0
    first, second = _column((OTHER, texts[:2])), _column((OTHER, texts[2:]))
    halves = reward.outcomes(*first) + reward.outcomes(*second)
    whole = reward.rewards(halves, group_size=4)
    split = reward.rewards(reward.outcomes(*first)) + reward.rewards(reward.outcomes(*second))
    slots = (CriterionSlot("essential", 3),)
    expected = [a.reward for a in aggregate_group(slots, [o.raw for o in halves])]
    assert whole == expected and whole != split
    assert split[2:] == [0.0, 0.0] and split[0] == 1.0


def test_failures_are_none_never_a_score():
    def broken(instances):
        raise ConnectionError("judge down")

    completions, instances = _column((INSTANCE, ["\\boxed{42}", "x"]))
    down = RubricReward(broken, max_failed_batches=2)
    assert down(None, completions, **{INSTANCE_COLUMN: instances}) == [None, None]
    with pytest.raises(JudgeDown, match="2 batches in a row; last error: judge failed: judge down"):
        down(None, completions, **{INSTANCE_COLUMN: instances})
    bad = ["{not json"] * 2
    assert RubricReward(JudgeScorer(Judge()))(None, completions, **{INSTANCE_COLUMN: bad}) == [None, None]
    # a fuzzy criterion the rule judge cannot score: the reward is unknown, not 0
    fuzzy = Instance.model_validate({**OTHER.model_dump(), "rubric": {"essential": [
        {"criterion": "Polite.", "reference": "polite", "weight": 2}]}})  # fmt: skip
    completions, instances = _column((fuzzy, ["yes", "no"]))
    rewards = RubricReward(JudgeScorer(Judge()))(None, completions, **{INSTANCE_COLUMN: instances})
    assert rewards == [None, None]


def test_the_dataset_column_is_required():
    with pytest.raises(ValueError, match="no 'genrm_instance' column"):
        RubricReward(JudgeScorer(Judge()))(None, ["x"])


def test_length_rules():
    reward = RubricReward(JudgeScorer(Judge()), length_rule=LengthRule(0.5, 2.0))
    long = "The product of six and seven, worked out step by step, is \\boxed{42}."
    completions, instances = _column((INSTANCE, ["\\boxed{42}", long]))
    rewards = reward(None, completions, **{INSTANCE_COLUMN: instances})
    assert rewards == [1.0, 0.0]  # same answer, but 7 times the reference's length
    limited = INSTANCE.model_copy(update={"max_response_chars": 20})
    completions, instances = _column((limited, ["\\boxed{42}", long]))
    assert RubricReward(JudgeScorer(Judge()))(None, completions, **{INSTANCE_COLUMN: instances}) == [1.0, 0.0]


def test_group_rewards_checks_its_input():
    outcome = Outcome("a", (CriterionSlot("essential", 1),), (1.0,))
    with pytest.raises(ValueError, match="do not split into groups of 2"):
        group_rewards([outcome] * 3, group_size=2)
    other = Outcome("a", (CriterionSlot("essential", 2),), (1.0,))
    with pytest.raises(ValueError, match="mixes rubrics"):
        group_rewards([outcome, other], group_size=2)
    failed = Outcome("a", error="judge failed")
    assert group_rewards([outcome, failed], group_size=2) == [1.0, None]
    assert all(math.isfinite(r) for r in group_rewards([outcome, outcome]))


def test_judge_settings():
    assert isinstance(make_scorer("rule"), JudgeScorer)
    with pytest.raises(ValueError, match="expected a reward server URL"):
        make_scorer("gpt-4o")
    record = policy_record(INSTANCE, system_prompt="Be brief.")
    assert [m["role"] for m in record["prompt"]] == ["system", "user"]
    assert json.loads(record[INSTANCE_COLUMN])["responses"] == []


def test_a_vision_policy_set_needs_an_image_somewhere(tmp_path):
    from policy_rl.data import policy_dataset

    text_only = tmp_path / "text.jsonl"
    text_only.write_text(INSTANCE.model_dump_json() + "\n" + OTHER.model_dump_json() + "\n")
    with pytest.raises(ValueError, match="no instance of .* has an image"):
        policy_dataset(text_only, vision=True)
    assert "images" not in policy_dataset(text_only).column_names
