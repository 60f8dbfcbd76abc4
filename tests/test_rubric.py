"""Rubric schemas and checks: each error names its field; verifiable and fuzzy criteria are told apart."""

import pytest
from pydantic import ValidationError

from genrm.methods.rubric.models import Criterion, Instance, Rubric
from genrm.methods.rubric.planning import RubricError, RubricPolicy, plan_rubric, verifiers_in


def _rubric(*essential, additional=()):
    def item(spec):
        text, reference, weight = spec
        return {"criterion": text, "reference": reference, "weight": weight}

    return Rubric.model_validate(
        {"essential": [item(e) for e in essential], "additional": [item(a) for a in additional]}
    )


GOOD = _rubric(
    ("The response names the component that turns water into steam.", "Boiler", 3),
    ("The response gives the box of the boiler.", "bbox_verify(target=[[531, 118, 892, 435]])", 2),
    additional=[("The response states the final option letter.", "expr_verify(target='B')", 1)],
)


def test_plan_tells_verifiable_from_fuzzy():
    plans = plan_rubric(GOOD)
    assert [(p.path, p.verifier) for p in plans] == [
        ("essential[0]", None),
        ("essential[1]", "bbox_verify"),
        ("additional[0]", "expr_verify"),
    ]
    assert plans[1].target_kwargs == {"target": [[531, 118, 892, 435]]}
    assert verifiers_in(plans) == ["expr_verify", "bbox_verify"]


@pytest.mark.parametrize(
    "reference, path, words",
    [
        ("nope_verify(target='a')", "essential[0].reference", "unknown verifier 'nope_verify'"),
        ("text_verify(predict='a')", "essential[0].reference", "predict belongs to the scoring side"),
        ("bbox_verify(target=[[0, 0, 100]])", "essential[0].reference", "not a list of 4 finite numbers"),
        ("bbox_verify(target=[[0, 0, 1001, 10]])", "essential[0].reference", "outside the 0-1000 grid"),
        ("time_verify(target='25:00', tformat='%H:%M')", "essential[0].reference", "does not match tformat"),
        ("text_verify(target='a', candidates=['b'])", "essential[0].reference", "exactly one of"),
        ("text_verify(target=open('x'))", "essential[0].reference", "function call"),
    ],
)
def test_bad_verifier_references(reference, path, words):
    with pytest.raises(RubricError) as info:
        plan_rubric(_rubric(("The response gives the value.", reference, 3)))
    assert info.value.issues[0][0] == path and words in info.value.issues[0][1]


def test_verifier_not_allowed_for_the_task_type():
    with pytest.raises(
        RubricError, match="bbox_verify is not allowed for task type 'ocr'; allowed: list_verify, text"
    ):
        plan_rubric(GOOD, task_type="ocr")
    assert len(plan_rubric(GOOD, task_type="general")) == 3


def test_unknown_task_type_lists_the_known_ones():
    with pytest.raises(RubricError, match="unknown task type 'ocrr'; known: caption, chart"):
        plan_rubric(GOOD, task_type="ocrr")


def test_policy_can_add_task_types():
    policy = RubricPolicy(task_verifiers={"boxes": frozenset({"bbox_verify"})})
    rubric = _rubric(("The response gives the box.", "bbox_verify(target=[[0, 0, 10, 10]])", 3))
    assert plan_rubric(rubric, "boxes", policy)[0].verifier == "bbox_verify"


@pytest.mark.parametrize(
    "criterion, reference",
    [
        ("The response says the answer is Boiler.", "text_verify(target='Boiler')"),
        ("The response selects option B.", "expr_verify(target='B')"),
        ("The total is 42.", "expr_verify(target='42')"),
        ("The box is at 531, 118, 892, 435.", "bbox_verify(target=[[531, 118, 892, 435]])"),
        ("The point is (591, 234).", "point_verify(target=[[591, 234]])"),
        ("The response names the boiler as the component.", "Boiler"),
        ("Lists M-30 among the models.", "list_verify(target=['M-30', 'M-31'])"),
    ],
)
def test_target_written_into_the_criterion_is_rejected(criterion, reference):
    with pytest.raises(RubricError, match="gives away the target"):
        plan_rubric(_rubric((criterion, reference, 3)))


@pytest.mark.parametrize(
    "criterion, reference",
    [
        ("The response gives the total in 2024.", "expr_verify(target='42')"),
        ("The response gives the value to 2 decimal places.", "expr_verify(target='2.25')"),
        ("The response gives a box around the boiler (x1 = 531 is the left edge).",
         "bbox_verify(target=[[531, 118, 892, 435]])"),
        ("Selects the best option.", "expr_verify(target='B')"),
    ],
)  # fmt: skip
def test_criteria_that_do_not_give_the_target_away(criterion, reference):
    assert plan_rubric(_rubric((criterion, reference, 3)))


def test_leak_check_can_be_turned_off():
    rubric = _rubric(("The response selects option B.", "expr_verify(target='B')", 3))
    assert plan_rubric(rubric, policy=RubricPolicy(check_target_leaks=False))


def test_every_issue_is_reported_at_once():
    rubric = _rubric(
        ("The response gives the value.", "nope_verify(target='a')", 3),
        ("The response selects option B.", "expr_verify(target='B')", 2),
    )
    with pytest.raises(RubricError) as info:
        plan_rubric(rubric, task_type="grounding")
    paths = [path for path, _ in info.value.issues]
    assert paths == ["essential[0].reference", "essential[1].reference", "essential[1].criterion"]


@pytest.mark.parametrize("weight", [0, 4, 2.5, "2", True, None])
def test_weight_outside_one_to_three_is_rejected(weight):
    with pytest.raises(ValidationError, match="weight"):
        Criterion(criterion="a", reference="b", weight=weight)


def test_instance_errors_name_the_field():
    with pytest.raises(ValidationError) as info:
        Instance.model_validate(
            {"id": "x", "prompt": "p", "rubric": {"essential": []}, "respones": [], "max_response_chars": -1}
        )
    fields = {".".join(map(str, e["loc"])) for e in info.value.errors()}
    assert fields == {"rubric.essential", "respones", "max_response_chars"}
