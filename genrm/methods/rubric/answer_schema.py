"""The JSON schema of one judge answer, built per request from the rubric, for constrained decoding.

Backends that constrain generation to a JSON schema (SGLang and vLLM through ``response_format`` of type
``json_schema``, with XGrammar or Outlines) can then only produce an answer that
:func:`genrm.methods.rubric.judge_output. parse_judge_output` reads without a schema failure:

- ``thought`` first, then ``essential`` and ``additional`` with exactly the rubric's criteria, in order
  (``prefixItems`` with ``items: false`` and equal ``minItems``/``maxItems``);
- an item is ``rationale`` then ``credit`` (the ``compact`` format, matched to the rubric by position); under the
  ``rlr3`` format it starts with ``criterion``, the rubric's text as a ``const`` (filled without sampling, but
  still one decoding step per token);
- a fuzzy criterion's ``credit`` is one of 0, 0.5, 1; a verifiable one's is a string matching a call of that
  criterion's verifier with literal arguments of the right shape (:func:`call_pattern`): strings single-quoted,
  without quotes or backslashes inside (what XGrammar can produce in a JSON string), numbers plain, or
  ``predict=None`` for a response that states no value;
- under the ``evidence`` format a fuzzy item has ``quote`` (bounded) before its ``credit``;
- ``thought`` and ``rationale`` have a maximum length, because output tokens are the main cost of judging. Under
  XGrammar a string with a length bound holds no escape at all (no quote, backslash or new line): fine for these
  free-text fields, and why the rubric schema of the teachers (:mod:`.teacher_rubrics`) bounds no string.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genrm.choices import (
    DEFAULT_SCORING_FORMAT,
    ScoringFormat,
    check_scoring_format,
    copies_criterion,
    quotes_evidence,
)
from genrm.methods.rubric.models import SECTIONS
from genrm.methods.rubric.planning import CriterionPlan
from verifiers.registry import REGISTRY

DEFAULT_MAX_THOUGHT_CHARS = 400
DEFAULT_MAX_RATIONALE_CHARS = 200
#: The longest quote of the ``evidence`` format: the shortest passage that earns a credit is a phrase or a sentence.
MAX_QUOTE_CHARS = 300

# Literal pieces of a scoring-side call, as regular expressions over the call string, written so that Python's
# and ECMAScript's regex dialects read them alike (ASCII classes only, no \d or \s, which are Unicode-aware in
# Python). XGrammar (SGLang's default grammar backend) matches a string pattern against the raw JSON text between
# the quotes and produces neither escaped quotes nor backslashes there, so string literals are single-quoted and hold
# no quote, backslash or control character: LaTeX is written without backslashes (3/4, sqrt(2), 9π).
#
# Bounded repetitions are spelled out (``[0-9]?[0-9]?`` rather than ``[0-9]{0,2}``, ``X X X`` rather than ``X{3}``):
# XGrammar 0.2.8 mis-scopes ``{m,n}`` before an optional group, so that ``(?:0|[1-9][0-9]{0,5})(?:\.[0-9]{1,6})?``
# accepted "040404" and 7-digit integers (tests/test_output_schema.py compares both engines on these patterns).
_STR = r"'[^'\"\\\x00-\x1f\x7f-\x9f]*'"


def _upto(piece: str, least: int, most: int) -> str:
    return piece * least + f"{piece}?" * (most - least)


_NUM = rf"-?(?:0|[1-9]{_upto('[0-9]', 0, 5)})(?:\.{_upto('[0-9]', 1, 6)})?"
_SEP = r", ?"
_STR_LIST = rf"\[(?:{_STR}(?:{_SEP}{_STR})*)?\]"
_KIND_PATTERNS: dict[str, str] = {
    "str": _STR,
    "str_list": _STR_LIST,
}


def _coords_pattern(size: int) -> str:
    shape = rf"\[{_NUM}{f'{_SEP}{_NUM}' * (size - 1)}\]"
    return rf"\[(?:{shape}(?:{_SEP}{shape})*)?\]"


def call_pattern(verifier: str) -> str:
    """A regular expression (anchored) for the scoring-side calls of ``verifier`` that the schema allows.

    Required keywords come first in signature order, optional ones may follow; values are literals of the keyword's
    kind (a boxes list has 4 numbers per item, a points list 2).
    """
    spec = REGISTRY[verifier]
    pieces: list[str] = []
    for param in spec.scoring_params:
        if param.kind == "coords":
            value = _coords_pattern(spec.arity)  # a coordinates keyword: the registry gives its arity
        else:
            value = _KIND_PATTERNS[param.kind]
        if param.name == "predict":  # predict=None: the response states no value (scores 0 whatever the target)
            value = f"(?:None|{value})"
        piece = f"{param.name}={value}"
        if param.required:
            pieces.append(piece if not pieces else f"{_SEP}{piece}")
        else:
            pieces.append(f"(?:{_SEP}{piece})?")
    return rf"^{verifier}\({''.join(pieces)}\)$"


def _item_schema(plan: CriterionPlan, max_rationale_chars: int, answer_format: ScoringFormat) -> dict[str, Any]:
    if plan.verifier is None:
        credit: dict[str, Any] = {"enum": [0, 0.5, 1]}
    else:
        credit = {"type": "string", "pattern": call_pattern(plan.verifier)}
    properties: dict[str, Any] = {}
    if copies_criterion(answer_format):
        properties["criterion"] = {"const": plan.criterion.criterion}
    properties["rationale"] = {"type": "string", "maxLength": max_rationale_chars}
    if plan.verifier is None and quotes_evidence(answer_format):
        properties["quote"] = {"type": "string", "maxLength": MAX_QUOTE_CHARS}
    properties["credit"] = credit
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def scoring_json_schema(
    plans: Sequence[CriterionPlan],
    max_thought_chars: int = DEFAULT_MAX_THOUGHT_CHARS,
    max_rationale_chars: int = DEFAULT_MAX_RATIONALE_CHARS,
    answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT,
) -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of the judge's answer for a rubric (see the module docstring).

    Args:
        plans: the rubric's plans, as the judge's output will be read (``genrm.methods.rubric.prompts.exposed_plans``).
        max_thought_chars: upper bound on the ``thought`` field, in characters.
        max_rationale_chars: upper bound on each ``rationale``, in characters.
        answer_format: the version of the answer format (``genrm.methods.rubric.models.ScoringFormat``).
    """
    answer_format = check_scoring_format(answer_format)
    properties: dict[str, Any] = {"thought": {"type": "string", "maxLength": max_thought_chars}}
    for section in SECTIONS:
        items = [_item_schema(p, max_rationale_chars, answer_format) for p in plans if p.section == section]
        array: dict[str, Any] = {"type": "array", "minItems": len(items), "maxItems": len(items)}
        if items:
            array["prefixItems"] = items
        array["items"] = False
        properties[section] = array
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "JudgeOutput",
        "type": "object",
        "properties": properties,
        "required": ["thought", *SECTIONS],
        "additionalProperties": False,
    }
