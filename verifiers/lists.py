"""list_verify: Hungarian matching of a predicted list of strings against a target list (or the best candidate list).

Score: each predicted item is compared with each target item by the normalized edit similarity of text_verify; the
one-to-one assignment with the largest total similarity is found by the Hungarian algorithm, and the total is divided
by the larger of the two list lengths (see ``verifiers.matching``). Order does not matter; missing and extra items
both cost. With ``candidates`` (a list of complete answer lists) the score is the maximum over candidate lists. Two
empty lists score 1.

The normalization switches of text_verify (``use_latex``, ``ignore_space``, ``ignore_punc``, ``ignore_case``,
``ignore_st``) are accepted on the rubric side too, and apply to every item.

Not accepted: more than ``VerifyConfig.max_list_items`` items on a side (over all candidate lists together on the
rubric side, so that the pairs compared stay bounded), or an item longer than ``VerifyConfig.max_list_item_chars``
characters before or after normalization (a prediction like that scores 0 as unparseable; a target like that is a
rubric error). A prediction that is a single string rather than a list is read as a one-item list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rapidfuzz.process import cdist

from verifiers.config import VerifyConfig
from verifiers.matching import matched_score
from verifiers.result import PredictionError, TargetError, VerifyResult
from verifiers.text import TextOptions, bounded_normal_form, similarity, targets_or_candidates


def _normal_items(
    items: Sequence[str], options: TextOptions, config: VerifyConfig, error: type[Exception], what: str
) -> list[str]:
    if len(items) > config.max_list_items:
        raise error(f"{what} has {len(items)} items; at most {config.max_list_items} are allowed")
    return [bounded_normal_form(item, options, config.max_list_item_chars, error, f"an item of {what}")
            for item in items]  # fmt: skip


def _item_similarity(pred: str, target: str, *, char_edits: bool = False, **_: Any) -> float:
    # rapidfuzz passes its scorer keywords (score_cutoff, ...); the text rule needs only its own
    return similarity(pred, target, char_edits)


def list_score(pred: Sequence[str], target: Sequence[str], char_edits: bool = False) -> float:
    """Hungarian-matched mean similarity of two already normalized lists, over the longer length."""
    if not pred or not target:
        return 1.0 if len(pred) == len(target) else 0.0
    scores = cdist(pred, target, scorer=_item_similarity, dtype=None, scorer_kwargs={"char_edits": char_edits})
    return matched_score(scores)


def check_list(rubric: Mapping[str, Any], scoring: Mapping[str, Any], config: VerifyConfig) -> VerifyResult:
    """Score a predicted list against the target list or candidate lists (see the module docstring)."""
    options = TextOptions.from_kwargs(rubric)
    lists = targets_or_candidates(rubric, config.max_candidates)
    total = sum(len(target) for target in lists)
    if total > config.max_list_items:
        raise TargetError(f"the target lists hold {total} items together; at most {config.max_list_items}")
    targets = [_normal_items(target, options, config, TargetError, "a target list") for target in lists]
    for raw, normal in zip(lists, targets, strict=True):
        emptied = next((item for item, form in zip(raw, normal, strict=True) if item.strip() and not form), None)
        if emptied is not None:
            raise TargetError(f"the target item {emptied!r:.60} normalizes to nothing under its options")
    pred = _normal_items(scoring["predict"], options, config, PredictionError, "the prediction")
    best = max(list_score(pred, target, options.char_edits) for target in targets)
    which = "the target list" if len(lists) == 1 else f"the best of {len(lists)} candidate lists"
    return VerifyResult(best, "ok", f"matched {len(pred)} predicted items to {which}: score {best:.4f}", "list_verify")
