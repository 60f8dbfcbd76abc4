"""list_verify: Hungarian matching of a predicted list of strings against a target list (or the best candidate list).

Score: each predicted item is compared with each target item by the normalized edit similarity of text_verify; the
one-to-one assignment with the largest total similarity is found by the Hungarian algorithm, and the total is divided
by the larger of the two list lengths (see ``verifiers.matching``). Order does not matter; missing and extra items
both cost. With ``candidates`` (a list of complete answer lists) the score is the maximum over candidate lists. Two
empty lists score 1.

The normalization switches of text_verify (``use_latex``, ``ignore_space``, ``ignore_punc``, ``ignore_case``,
``ignore_st``) are accepted on the rubric side too, and apply to every item.

Not accepted: more than ``VerifyConfig.max_list_items`` items on a side, or an item longer than
``VerifyConfig.max_list_item_chars`` characters (a prediction like that scores 0 as unparseable; a target like that is
a rubric error). A prediction that is a single string rather than a list is read as a one-item list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from verifiers.config import VerifyConfig
from verifiers.matching import matched_score
from verifiers.result import PredictionError, TargetError, VerifyResult
from verifiers.text import TextOptions, normalize_text, targets_or_candidates


def _check_items(items: Sequence[str], config: VerifyConfig, error: type[Exception], what: str) -> None:
    if len(items) > config.max_list_items:
        raise error(f"{what} has {len(items)} items; at most {config.max_list_items} are allowed")
    for item in items:
        if len(item) > config.max_list_item_chars:
            raise error(f"an item of {what} has {len(item)} characters; at most {config.max_list_item_chars}")


def list_score(pred: Sequence[str], target: Sequence[str]) -> float:
    """Hungarian-matched mean similarity of two already normalized lists, over the longer length."""
    if not pred or not target:
        return 1.0 if len(pred) == len(target) else 0.0
    scores = cdist(pred, target, scorer=Levenshtein.normalized_similarity, dtype=None)
    return matched_score(scores)


def check_list(rubric: Mapping[str, Any], scoring: Mapping[str, Any], config: VerifyConfig) -> VerifyResult:
    """Score a predicted list against the target list or candidate lists (see the module docstring)."""
    lists = targets_or_candidates(rubric, config.max_candidates)
    for target in lists:
        _check_items(target, config, TargetError, "a target list")
    predict = scoring["predict"]
    _check_items(predict, config, PredictionError, "the prediction")

    options = TextOptions.from_kwargs(rubric)
    pred = [normalize_text(item, options) for item in predict]
    best = max(list_score(pred, [normalize_text(item, options) for item in target]) for target in lists)
    which = "the target list" if len(lists) == 1 else f"the best of {len(lists)} candidate lists"
    return VerifyResult(best, "ok", f"matched {len(pred)} predicted items to {which}: score {best:.4f}", "list_verify")
