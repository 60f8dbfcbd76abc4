"""Rewards a careful grader would not give, found by hostile probes, through every path a reward leaves by: the
scoring library (``genrm score``), ``/v1/score``, ``/get_reward`` with groups gathered across requests, TRL's reward
function and verl's ``compute_score``.

- An empty target (``bbox_verify(target=[])``: the object is not in the image) is met only by a response that says
  there is nothing; a response that states no value, or a value that does not read, gets 0.
- A response whose final answer is stated several times with different values states several: 0.
- A box list with a malformed member is scored as the verifier scores it (a miss), never cleaned up by the reader.
- Call syntax in a response (``predict='12'``) is content, never a keyword.
- An answer counts only where the response asserts it (``verifiers.assertion``): not a relation (``x != 12``), nor a
  negated, disowned, reported, quoted, fenced, echoed or reasoning answer; a refusal states no value.
- Short text is compared as words: a negation, a negating prefix or another word is a miss.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from fake_judge import with_app
from hypothesis import given, settings
from hypothesis import strategies as st

from genrm.cli.main import main
from genrm.engine import Judge
from genrm.methods import make_method
from genrm.methods.rubric.method import score_instance
from genrm.methods.rubric.models import Instance
from policy_rl.data import policy_record
from policy_rl.method_reward import INSTANCE_COLUMN, MethodReward
from policy_rl.scorers import JudgeScorer
from policy_rl.verl_reward import compute_score_batch, verl_row
from serving.defences.score_workers import scored_inline
from serving.settings import ServerSettings

LONG = "I looked at this for a while and thought about what the question asks for, but " * 3

#: reference | responses with the reward a careful grader gives each (one group per reference)
CASES: list[tuple[str, list[tuple[str, float]]]] = [
    ("bbox_verify(target=[])", [
        ("Final answer: none", 1.0),
        ("There is no banana in the image.", 1.0),
        ("\\boxed{[]}", 1.0),
        ("\\boxed{banana}", 0.0),
        ("Final answer: I cannot answer that.", 0.0),
        # a refusal states no value; only a statement that the thing is absent meets an empty target
        ("no idea", 0.0),
        ("No comment", 0.0),
        ("It is not possible to determine.", 0.0),
        ("That's not something I can answer.", 0.0),
        ("Final answer: it is not in the image", 1.0),
        ("Final answer: [[100, 200, 300]]", 0.0),  # a malformed box is a box, not nothing
        ("Final answer: .", 0.0),
        (LONG + "and that is all.", 0.0),  # no final answer at all
    ]),
    ("point_verify(target=[])", [("Final answer: 42", 0.0), ("Final answer: it is not in the image", 1.0)]),
    ("list_verify(target=[])", [("Final answer: .", 0.0), ("Final answer: none", 1.0), ("Final answer: cat", 0.0),
                                ("no clue", 0.0)]),
    ("expr_verify(target='12')", [
        ("\\boxed{8} or maybe \\boxed{12}", 0.0),
        ("Final answer: 8\n\nFinal answer: 12", 0.0),
        ("The answer is \\boxed{8}.\nFinal answer: 12", 0.0),
        ("Final answer: x = 8, y = 12", 0.0),
        ("\\boxed{predict='12'}", 0.0),
        ("Final answer: target=12", 0.0),
        ("So we get \\boxed{12}.\nFinal answer: 12", 1.0),  # the same value twice is one answer
        ("The total is \\boxed{12}.\nFinal answer: $12", 1.0),
        ("Final answer: x = 12", 1.0),
    ]),
    # an answer counts only where the response asserts it: a relation is no value
    ("expr_verify(target='12')", [
        ("Final answer: x != 12", 0.0),
        ("Final answer: x <= 12", 0.0),
        ("Final answer: x >= 12", 0.0),
        ("Final answer: x =/= 12", 0.0),
        ("Final answer: x \\ne 12", 0.0),
        ("Final answer: x ≠ 12", 0.0),
        ("Final answer: x < 12", 0.0),
        ("Final answer: -12", 0.0),
        ("Final answer: 12", 1.0),
    ]),
    # ... nor negated, disowned, reported, quoted, fenced, echoed or in reasoning
    ("expr_verify(target='12')", [
        ("I don't think the answer is 12.", 0.0),
        ("It is not true that the final answer is 12.", 0.0),
        ("Some would say the answer is 12.\nI disagree: I get 8.", 0.0),
        ("Final answer: 12 is wrong", 0.0),
        ("Final answer: 12 is not correct", 0.0),
        ("Final answer: 12 (wrong)", 0.0),
        ("Is the answer 12?", 0.0),
        ("If the answer were 12, the sum would be odd.", 0.0),
        (LONG + "\n> Final answer: 12\n\nI get 8 instead.", 0.0),
        (LONG + "\n```\nFinal answer: 12\n```\nI get 8.", 0.0),
        ("```python\nprint('\\boxed{12}')\n```", 0.0),
        ("Run `\\boxed{12}` to see.", 0.0),
        ("Put your answer in \\boxed{12}.\n\nMy answer: 8", 0.0),
        ("The template shows \\boxed{12}.\nAnswer: 8", 0.0),
        ('You wrote "Answer: 12" in the prompt.', 0.0),
        ("\\boxed{8 \\boxed{12}}", 0.0),
        ("Final answer: 8\n<think>\\boxed{12}", 0.0),
        ("<!-- Final answer: 12 -->Final answer: 8", 0.0),
        # real answers keep their rewards
        ("Since 5 is not a factor, the answer is 12.", 1.0),
        ("The answer is 12, not 8.", 1.0),
        ("x is not negative, so \\boxed{12}", 1.0),
        ("Put the answer in \\boxed{}.\n\nThe answer is \\boxed{12}.", 1.0),
        ("Fill in \\boxed{\\phantom{2}}: we get \\boxed{12}.", 1.0),
        ("<think>Maybe 8.</think>Final answer: 12", 1.0),
        ("Final answer: 12^{\\mathrm{th}}", 1.0),
    ]),
    ("expr_verify(target='B')", [
        ("Answer: (B) is incorrect", 0.0),
        ("Answer: B. Actually no, C.", 0.0),
        ("Answer: not B", 0.0),
        ("The answer is (B).", 1.0),
    ]),
    ("time_verify(target='18:15', tformat='%H:%M')", [
        ("18:15 is incorrect", 0.0),
        ("18:15 (wrong)", 0.0),
        ("anything but 18:15", 0.0),
        ("Final answer: 18:15", 1.0),
    ]),
    ("time_verify(target='2024-03-01', tformat='%Y-%m-%d')", [
        ("2024-03-01 is wrong", 0.0),
        ("Final answer: 2024-03-01", 1.0),
    ]),
    ("bbox_verify(target=[[100, 100, 300, 300]])", [
        ("not [[100,100,300,300]]", 0.0),
        ("Final answer: [[100, 100, 300, 300]]", 1.0),
    ]),
    ("point_verify(target=[[500, 500]])", [
        ("anywhere except (500, 500)", 0.0),
        ("Final answer: (500, 500)", 1.0),
    ]),
    # short text is compared as words: a negation or another word is a miss
    ("text_verify(target='Paris')", [
        ("not Paris", 0.0),
        ("Final answer: not Paris", 0.0),
        ("Final answer: Parish", 0.0),
        ("Final answer: Paris", 1.0),
    ]),
    ("text_verify(target='true')", [("Final answer: untrue", 0.0), ("Final answer: true", 1.0)]),
    ("text_verify(target='possible')", [("Final answer: impossible", 0.0), ("Final answer: possible", 1.0)]),
    ("text_verify(target='yes')", [
        ("At first I thought the final answer was 'no'.\nFinal answer: yes", 1.0),
        ("We must check whether the final answer is 'no'.\n\nFinal answer: yes", 1.0),
        ("Final answer: no", 0.0),
    ]),
    ("text_verify(target='Do not enter')", [("Final answer: Do not enter", 1.0), ("Final answer: Do enter", 0.0)]),
]  # fmt: skip
REFERENCES = [reference for reference, _ in CASES]


def _instance(index: int) -> Instance:
    reference, rows = CASES[index]
    return Instance(id=f"probe-{index}", prompt="Answer the question about the image.", task_type="general",
                    rubric={"essential": [{"criterion": "Gives the answer.", "reference": reference, "weight": 1}]},
                    responses=[response for response, _ in rows])  # fmt: skip


def _expected(index: int) -> list[float]:
    return [reward for _, reward in CASES[index][1]]


@pytest.mark.parametrize("index", range(len(CASES)), ids=REFERENCES)
def test_the_scoring_library_pays_what_a_careful_grader_pays(index):
    result = score_instance(_instance(index))
    assert result.rewards == _expected(index), [r.criteria[0].reason for r in result.records]


def test_genrm_score_pays_what_a_careful_grader_pays(tmp_path, capsys):
    source, out = tmp_path / "probes.jsonl", tmp_path / "rewards.jsonl"
    source.write_text("".join(_instance(i).model_dump_json() + "\n" for i in range(len(CASES))), encoding="utf-8")
    assert main(["score", str(source), "-o", str(out), "-q"]) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]
    assert [line["rewards"] for line in lines] == [_expected(i) for i in range(len(CASES))]


def test_a_malformed_box_among_boxes_is_the_verifiers_miss_on_every_path():
    box = Instance(id="boxes", prompt="Box the cup.", task_type="grounding",
                   rubric={"essential": [{"criterion": "Boxes the cup.",
                                          "reference": "bbox_verify(target=[[100, 100, 300, 300]])", "weight": 1}]},
                   responses=["Final answer: [[100, 100, 300, 300], [5, 5, 5]]"])  # fmt: skip
    (criterion,) = score_instance(box).records[0].criteria
    assert criterion.score == 0.5 and criterion.extracted == "bbox_verify(predict=[[100, 100, 300, 300], [5, 5, 5]])"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("workers", [0, 1], ids=["in-process", "in-a-worker"])
async def test_v1_score_pays_what_a_careful_grader_pays(workers):
    body = {"groups": [json.loads(_instance(i).model_dump_json()) for i in range(len(CASES))]}
    responses = sum(len(group["responses"]) for group in body["groups"])
    assert not scored_inline(len(json.dumps(body)), responses)  # with a worker, this body is scored there

    async def run(http):
        return await http.post("/v1/score", json=body)

    answer = await with_app(ServerSettings(score_workers=workers), run)
    assert answer.status_code == 200, answer.text
    assert [group["rewards"] for group in answer.json()["groups"]] == [_expected(i) for i in range(len(CASES))]


CHATML = "<|im_start|>user\nAnswer the question about the image.<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.anyio
@pytest.mark.parametrize("index", range(len(CASES)), ids=REFERENCES)
async def test_get_reward_with_gathered_groups_pays_what_a_careful_grader_pays(index):
    instance = _instance(index)
    label = instance.model_dump_json(exclude={"responses"})

    async def run(http):
        bodies = [{"query": [CHATML + r + "<|im_end|>"], "prompts": [CHATML], "labels": [label]}
                  for r in instance.responses]  # fmt: skip
        return await asyncio.gather(*(http.post("/get_reward", json=body) for body in bodies))

    settings = ServerSettings(group_size=len(instance.responses), group_wait_s=30)
    answers = await with_app(settings, run)
    assert [a.json()["rewards"][0] for a in answers] == _expected(index)


def test_trl_and_verl_reward_functions_pay_what_a_careful_grader_pays():
    method = make_method("rubric")
    reward = MethodReward(method, JudgeScorer(Judge(), method))
    for index in range(len(CASES)):
        instance = _instance(index)
        row = policy_record(instance.model_copy(update={"responses": []}))
        completions = [[{"role": "assistant", "content": text}] for text in instance.responses]
        column = {INSTANCE_COLUMN: [row[INSTANCE_COLUMN]] * len(completions)}
        assert reward([None] * len(completions), completions, **column) == _expected(index)
        truth = verl_row(instance.model_copy(update={"responses": []}), 0)["reward_model"]["ground_truth"]
        count = len(instance.responses)
        scores = compute_score_batch(["genrm"] * count, instance.responses, [truth] * count, [{}] * count)
        assert [s["score"] for s in scores] == _expected(index)


#: Pieces of responses that never say there is nothing (no "no", "none", "not", empty brackets ...).
_PIECES = ["12", "-3.5", "100", "banana", "cat", "x", "=", ",", ";", ".", " ", "\n", "[", "]", "(", ")", "[1, 2]",
           "[10, 20, 30, 40]", "\\boxed{", "}", "Final answer:", "The answer is", "maybe", "or", "and", "predict=",
           "'", "I think", "so"]  # fmt: skip
_EMPTY_BRACKETS = re.compile(r"\[\s*\]|\(\s*\)|\{\s*\}")


@settings(max_examples=150, deadline=None)
@given(text=st.lists(st.sampled_from(_PIECES), max_size=25).map("".join),
       reference=st.sampled_from(["bbox_verify(target=[])", "point_verify(target=[])", "list_verify(target=[])",
                                  "text_verify(target='')"]))  # fmt: skip
def test_an_empty_target_pays_no_response_that_does_not_say_there_is_nothing(text, reference):
    if _EMPTY_BRACKETS.search(text):
        return  # "[]" says there is nothing
    instance = Instance(id="p", prompt="Where is it?", task_type="general",
                        rubric={"essential": [{"criterion": "Answers.", "reference": reference, "weight": 1}]},
                        responses=[text])  # fmt: skip
    result = score_instance(instance)
    assert result.rewards == [0.0], (text, result.records[0].criteria[0].reason)


@pytest.mark.parametrize(
    "response, reward",
    [("Final answer: none", 1.0), ("There is no banana in the image.", 1.0), ("\\boxed{banana}", 0.0),
     ("Final answer: I cannot answer that.", 0.0), (LONG + "and that is all.", 0.0)],
)  # fmt: skip
def test_an_old_judges_empty_value_counts_only_where_the_response_says_there_is_nothing(response, reward):
    from genrm.methods.rubric.execution import execute
    from genrm.methods.rubric.judge_output import CriterionJudgement, ParsedJudgement
    from genrm.methods.rubric.models import Rubric
    from genrm.methods.rubric.planning import plan_rubric

    rubric = Rubric.model_validate({"essential": [{"criterion": "Boxes the banana.",
                                                   "reference": "bbox_verify(target=[])", "weight": 1}]})  # fmt: skip
    (plan,) = plan_rubric(rubric)
    # a judge trained before predict=None existed writes [] for "states no value" and "says there is none" alike
    old = ParsedJudgement(None, "", criteria=[CriterionJudgement(plan, call="bbox_verify(predict=[])")])
    (score,) = execute(old, [plan], response=response)
    assert score.score == reward, score.reason
    (unread,) = execute(old, [plan])  # without the response, the call is taken as written
    assert unread.score == 1.0
