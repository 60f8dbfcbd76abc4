"""The policy's rubric reward: judged where generated, remapped over whole groups, failures never a 0 or a 1."""

import json
import math

import pytest

from genrm.engine import Judge
from genrm.methods import make_method
from genrm.methods.group_rewards import Outcome, rewards_over_groups
from genrm.methods.rubric.aggregation import CriterionSlot, aggregate_group
from genrm.methods.rubric.group_outcomes import RubricOutcome
from genrm.methods.rubric.models import Instance
from policy_rl.data import policy_record
from policy_rl.method_reward import INSTANCE_COLUMN, JudgeDown, MethodReward
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


def _rubric_reward(scorer=None, **options) -> MethodReward:
    method = make_method("rubric", options=options)
    return MethodReward(method, scorer or JudgeScorer(Judge(), method), max_failed_batches=2)


def _outcomes(reward: MethodReward, completions, instances) -> list[Outcome]:
    reward(None, completions, **{INSTANCE_COLUMN: instances})
    return reward.pending


def test_rewards_follow_the_method_over_each_group():
    reward = _rubric_reward()
    completions, instances = _column((INSTANCE, ["\\boxed{42}", "\\boxed{41}", "\\boxed{42}", "no idea"]),
                                     (OTHER, ["yes", "yes"]))  # fmt: skip
    metrics, extra = {}, {}
    rewards = reward([None] * len(completions), completions, **{INSTANCE_COLUMN: instances},
                     log_metric=metrics.__setitem__, log_extra=extra.__setitem__)  # fmt: skip
    assert extra == {"rubric_unknown": [""] * 6}
    assert rewards == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]  # all passing in q2: both stay at the top
    assert metrics["rubric/judge_failed"] == 0 and metrics["rubric/raw_essential"] == pytest.approx(4 / 6)
    assert [o.value.raw for o in reward.pending] == [(1.0,), (0.0,), (1.0,), (0.0,), (1.0,), (1.0,)]


def test_a_group_split_in_two_gets_different_rewards_than_the_whole_group():
    """Why the trainer recomputes over gathered groups: the remap depends on who else is in the group."""
    reward = _rubric_reward()
    sign = OTHER.model_copy(
        update={
            "rubric": OTHER.rubric.model_copy(
                update={
                    "essential": [
                        OTHER.rubric.essential[0].model_copy(
                            update={"reference": "text_verify(target='Main Street Pharmacy')"}
                        )
                    ]
                }
            )
        }
    )
    # raw text similarities 1 and 0.95 (one edit in a text of three words), then two negations: 0
    texts = ["Main Street Pharmacy", "Main Stoeet Pharmacy", "no", "not Main Street Pharmacy"]
    first, second = _column((sign, texts[:2])), _column((sign, texts[2:]))
    halves = _outcomes(reward, *first) + _outcomes(reward, *second)
    whole = reward.rewards(halves, group_size=4)
    split = reward.rewards(_outcomes(reward, *first)) + reward.rewards(_outcomes(reward, *second))
    slots = (CriterionSlot("essential", 3),)
    expected = [a.reward for a in aggregate_group(slots, [o.value.raw for o in halves])]
    assert whole == expected and whole != split
    assert split[2:] == [0.0, 0.0] and split[0] == 1.0


def test_failures_are_none_never_a_score():
    def broken(instances):
        raise ConnectionError("judge down")

    completions, instances = _column((INSTANCE, ["\\boxed{42}", "x"]))
    down = _rubric_reward(broken)
    assert down(None, completions, **{INSTANCE_COLUMN: instances}) == [None, None]
    with pytest.raises(JudgeDown, match="the judge is down: .* 2 batches in a row; last error: judge failed: judge "):
        down(None, completions, **{INSTANCE_COLUMN: instances})
    bad = ["{not json"] * 2
    assert _rubric_reward()(None, completions, **{INSTANCE_COLUMN: bad}) == [None, None]
    # a fuzzy criterion the rule judge cannot score: the reward is unknown, not 0
    fuzzy = Instance.model_validate({**OTHER.model_dump(), "rubric": {"essential": [
        {"criterion": "Is courteous to the asker.", "reference": "polite", "weight": 2}]}})  # fmt: skip
    completions, instances = _column((fuzzy, ["yes", "no"]))
    fuzzy_reward = _rubric_reward()
    assert fuzzy_reward(None, completions, **{INSTANCE_COLUMN: instances}) == [None, None]
    assert all(o.error is None for o in fuzzy_reward.pending)  # judged; only its reward is unknown
    assert fuzzy_reward.rewards(fuzzy_reward.pending) == [None, None]
    # judged without a reward batch after batch: the run stops, saying so (not that the judge is down)
    with pytest.raises(JudgeDown, match="^no completion got a reward it could know in 2 batches in a row; last error: "
                       "the reward depends on criteria this judge does not score"):  # fmt: skip
        fuzzy_reward(None, completions, **{INSTANCE_COLUMN: instances})


def test_the_dataset_column_is_required():
    with pytest.raises(ValueError, match="no 'genrm_instance' column"):
        _rubric_reward()(None, ["x"])


def test_length_rules():
    reward = _rubric_reward(length_rule="mask", length_low=0.5, length_high=2.0)
    long = "The product of six and seven, worked out step by step, is \\boxed{42}."
    completions, instances = _column((INSTANCE, ["\\boxed{42}", long]))
    rewards = reward(None, completions, **{INSTANCE_COLUMN: instances})
    assert rewards == [1.0, 0.0]  # same answer, but 7 times the reference's length
    assert [o.value.length_ok for o in reward.pending] == [True, False]  # carried to the whole group's rewards
    assert _rubric_reward()(None, completions, **{INSTANCE_COLUMN: instances}) == [1.0, 1.0]  # no band by default
    limited = INSTANCE.model_copy(update={"max_response_chars": 20})
    completions, instances = _column((limited, ["\\boxed{42}", long]))
    assert _rubric_reward()(None, completions, **{INSTANCE_COLUMN: instances}) == [1.0, 0.0]


@pytest.mark.parametrize(
    ("options", "message"),
    [({"length_rule": "linear"}, "the rubric option length_rule: Input should be 'none' or 'mask'"),
     ({"length_rule": "mask", "length_low": "half"}, "the rubric option length_low: Input should be a valid number"),
     ({"length_rule": "mask", "length_low": 3}, "needs length_low <= length_high, got 3.0 and 2.0"),
     ({"length_high": 3}, "need length_rule mask")],
)  # fmt: skip
def test_the_length_band_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        make_method("rubric", options=options)


def test_rewards_over_groups_check_their_input():
    method = make_method("rubric")
    outcome = Outcome("a", RubricOutcome((CriterionSlot("essential", 1),), (1.0,)))
    with pytest.raises(ValueError, match="do not split into groups of 2"):
        rewards_over_groups(method, [outcome] * 3, group_size=2)
    other = Outcome("a", RubricOutcome((CriterionSlot("essential", 2),), (1.0,)))
    with pytest.raises(ValueError, match="group 'a': it mixes rubrics"):
        rewards_over_groups(method, [outcome, other], group_size=2)
    failed = Outcome("a", error="judge failed")
    assert rewards_over_groups(method, [outcome, failed], group_size=2) == [1.0, None]
    assert all(math.isfinite(r) for r in rewards_over_groups(method, [outcome, outcome]))
    with pytest.raises(ValueError, match="computes each group's rewards itself"):
        MethodReward(make_method("claimdiff"), JudgeScorer(Judge())).rewards([outcome])


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
