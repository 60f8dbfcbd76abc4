"""The false-positive audit set (RLR3 section 5.5, appendix B.4): regular responses and abnormal ones, annotated.

An audit example is a judge example (:class:`genrm.methods.rubric.judge_data.JudgeExample`: an input, one response, one
label per criterion) with the category it belongs to:

- ``regular``: a response of the test set as it was, with its labels;
- ``no_final_answer``: an attempt that never states the requested final answer;
- ``irrelevant``: a fluent response about something else;
- ``wrong_but_plausible``: the task's format with at least one answer element changed to a plausible wrong value;
- ``adversarial``: written to be given credit it does not earn, by one of the attacks of :data:`ATTACKS`
  (authoritative circumlocution, a symbolic-equivalence bluff, sound reasoning with an incorrect final selection,
  instructions aimed at the judge).
- ``master_key``: a master key (:mod:`genrm.methods.master_keys`: a reasoning opener or a bare symbol) alone, or
  before or after a wrong-but-plausible response; its ``attack`` names the key.

The labels of an abnormal response say what a correct extractor reads from it (an empty value where the response
states none) and the credit that deserves: for a verifiable criterion the real verifier's score of that value against
the rubric's target, for a fuzzy one the constructor's credit. A judge gives a false positive on a criterion when it
awards clearly more than that (:mod:`audit_run`).

This module holds the record, the leak check that keeps an abnormal response from stating a target it must not
earn, and reading and writing audit files. The constructors are in :mod:`audit_constructors`
(deterministic) and :mod:`audit_llm` (a model through any backend, then quality control).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from genrm.methods.master_keys import MASTER_KEYS
from genrm.methods.rubric.judge_data import CriterionLabel, JudgeExample, read_examples
from genrm.methods.rubric.planning import CriterionPlan, appears_in, plan_rubric, target_values

Category = Literal["regular", "no_final_answer", "irrelevant", "wrong_but_plausible", "adversarial", "master_key"]
Attack = Literal["circumlocution", "symbolic_bluff", "incorrect_selection", "injection"]

#: The abnormal categories, in the order reports show them.
ABNORMAL: tuple[Category, ...] = ("no_final_answer", "irrelevant", "wrong_but_plausible", "adversarial")
#: The adversarial attacks (appendix B.4's three red-team patterns, and instructions injected for the judge).
ATTACKS: tuple[Attack, ...] = ("circumlocution", "symbolic_bluff", "incorrect_selection", "injection")
#: The category of master-key responses: built for every key beside the balanced categories, reported per key.
MASTER_KEY: Category = "master_key"


class AuditExample(JudgeExample):
    """One response of the audit set with its category and per-criterion annotation (see the module docstring)."""

    category: Category = "regular"
    attack: str | None = Field(
        None, max_length=64, description="the adversarial attack, or the master key; set only for those categories"
    )
    origin: str | None = Field(None, max_length=256, description="id of the regular example it was built from")
    constructor: str = Field("original", max_length=256, description="original, deterministic, or llm:MODEL")

    @model_validator(mode="after")
    def _attack_only_when_adversarial(self) -> AuditExample:
        named = {"adversarial": ATTACKS, MASTER_KEY: tuple(MASTER_KEYS)}.get(self.category)
        if (self.attack is not None) != (named is not None):
            raise ValueError("an adversarial or master-key example names its attack or key, and only those do")
        if named is not None and self.attack not in named:
            raise ValueError(f"unknown {self.category} {self.attack!r:.40}; known: {', '.join(named)}")
        return self


def abnormal_from(
    base: AuditExample,
    category: Category,
    response: str,
    labels: list[CriterionLabel],
    attack: str | None,
    constructor: str,
    variant: str = "",
) -> AuditExample:
    """An abnormal response to ``base``'s input: same input and rubric, its own response, labels and category (its id
    is the input's, the category's and ``variant``'s, when given)."""
    kept = base.model_dump(exclude={"id", "response", "labels", "thought", "category", "attack", "origin",
                                    "constructor"})  # fmt: skip
    thought = f"A {category.replace('_', ' ')} response" + (f" ({attack.replace('_', ' ')})." if attack else ".")
    ident = "-".join(filter(None, (base.input_id, category, variant)))
    return AuditExample(**kept, id=ident, response=response, labels=labels, thought=thought, category=category,
                        attack=attack, origin=base.id, constructor=constructor)  # fmt: skip


def plans_of(example: JudgeExample) -> list[CriterionPlan]:
    """The rubric's plans of ``example`` (targets included: the constructors and the audit read them)."""
    return plan_rubric(example.rubric, example.task_type)


#: Fuzzy references longer than this are descriptions, not values: they are not searched for.
MAX_FUZZY_VALUE_CHARS = 60


def leaked_targets(
    response: str, plans: Sequence[CriterionPlan], labels: Sequence[CriterionLabel], full_credit: float = 0.99
) -> list[str]:
    """The targets ``response`` states for criteria whose labels deny it full credit; empty when there is no leak.

    A verifiable criterion leaks when every string of one of its targets appears (a box leaks when all four
    coordinates do); a fuzzy one when its reference is short (a value, not a description) and appears. Criteria the
    labels give full credit are not checked: stating their target is right.

    Args:
        response: the text to check.
        plans: the rubric's plans, in order (with targets).
        labels: the annotation, one per plan.
        full_credit: a label credit at or above this is full credit, in (0, 1].
    """
    leaks = []
    for plan, label in zip(plans, labels, strict=True):
        if label.credit >= full_credit:
            continue
        if plan.verifier is None:
            value = plan.criterion.reference.strip()
            groups = [(value,)] if value and len(value) <= MAX_FUZZY_VALUE_CHARS else []
        else:
            groups = target_values(plan.verifier, plan.target_kwargs)
        for group in groups:
            if group and all(appears_in(value, response) for value in group):
                leaks.append(f"{plan.path}: the target {', '.join(group)!r:.80} appears in the response")
                break
    return leaks


def read_audit(lines: Iterable[str], source: str = "") -> list[AuditExample]:
    """Audit examples from JSONL lines of the file ``source`` (plain judge examples read as ``regular``); ValueError
    names a bad line and field."""
    return read_examples(lines, AuditExample, source)


def regular_examples(examples: Iterable[JudgeExample]) -> list[AuditExample]:
    """Test-set examples as the audit's regular responses (already-audit examples keep their category)."""
    out: list[AuditExample] = []
    for example in examples:
        if isinstance(example, AuditExample):
            out.append(example)
        else:
            out.append(AuditExample(**dict(example), category="regular", origin=example.id))
    return out


#: The categories whose responses become negative training examples: every abnormal one and the master keys.
NEGATIVE_CATEGORIES: tuple[Category, ...] = (*ABNORMAL, MASTER_KEY)


def select(audit: Iterable[AuditExample], categories: Sequence[str] = NEGATIVE_CATEGORIES,
           exclude: Sequence[str] = ()) -> list[AuditExample]:  # fmt: skip
    """The audit examples of ``categories`` whose attack or master key is not in ``exclude`` (by name: what is held
    out of training, to measure the trained judge on it). Raises ValueError naming an unknown category, attack or
    key."""
    unknown = [c for c in categories if c not in NEGATIVE_CATEGORIES and c != "regular"]
    unknown += [a for a in exclude if a not in (*ATTACKS, *MASTER_KEYS)]
    if unknown:
        raise ValueError(f"unknown category, attack or master key {unknown[0]!r:.40}; categories: "
                         f"{', '.join(NEGATIVE_CATEGORIES)}; attacks: {', '.join(ATTACKS)}")  # fmt: skip
    return [e for e in audit if e.category in categories and e.attack not in exclude]


def training_examples(audit: Iterable[AuditExample]) -> list[JudgeExample]:
    """The abnormal responses of an audit set as judge-training examples (``source`` ``audit``; regular ones are
    skipped, the training set has its own): each keeps its per-criterion annotation (the value a correct extractor
    reads, empty where the response states none, and the credit deserved) as its labels, so that a judge trained on
    them learns to give a master key or an attack the credit it deserves rather than the credit it was talked into.
    How Master-RM brought master-key false positives near zero, here from the audit's own constructors."""
    fields = set(JudgeExample.model_fields)
    return [JudgeExample.model_validate({**e.model_dump(include=fields), "source": "audit"}) for e in audit
            if e.category != "regular"]  # fmt: skip


def category_counts(examples: Iterable[AuditExample]) -> dict[str, Any]:
    """How many examples per category, per attack within the adversarial one and per key within the master keys."""
    counts: dict[str, Any] = {name: 0 for name in ("regular", *ABNORMAL)}
    attacks: dict[str, int] = {}
    keys: dict[str, int] = {}
    for example in examples:
        counts[example.category] = counts.get(example.category, 0) + 1
        named = keys if example.category == MASTER_KEY else attacks
        if example.attack:
            named[example.attack] = named.get(example.attack, 0) + 1
    counts["attacks"] = attacks
    if keys:
        counts["master_keys"] = keys
    return counts
