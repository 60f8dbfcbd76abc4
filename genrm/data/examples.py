"""Any method's labelled judge examples as sets: balanced between those that lose credit and those that do not, and
split into train and test by input. An example has ``input_id`` (the input it judges) and ``loses_credit`` (the
balancing key: some of its credit is lost)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, TypeVar

E = TypeVar("E")


def balance(examples: Sequence[E], seed: int = 0) -> list[E]:
    """As many examples that lose credit as examples that do not (the larger side is subsampled, order kept). A set
    with one side empty has nothing to balance against and is kept whole, rather than emptied."""
    losing = [e for e in examples if e.loses_credit]  # type: ignore[attr-defined]
    full = [e for e in examples if not e.loses_credit]  # type: ignore[attr-defined]
    if not losing or not full:
        return list(examples)
    size = min(len(losing), len(full))
    rng = random.Random(seed)
    kept = {id(e) for e in rng.sample(losing, size) + rng.sample(full, size)}
    return [e for e in examples if id(e) in kept]


def split_by_input(examples: Sequence[E], test_fraction: float = 0.15, seed: int = 0) -> tuple[list[E], list[E]]:
    """Train and test examples, split by ``input_id`` so that no input appears in both.

    Args:
        examples: the examples to split.
        test_fraction: share of inputs held out, in (0, 1).
        seed: shuffles the inputs.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    inputs = sorted({_input(e) for e in examples})
    random.Random(seed).shuffle(inputs)
    held = set(inputs[: max(1, round(len(inputs) * test_fraction))])
    return [e for e in examples if _input(e) not in held], [e for e in examples if _input(e) in held]


def _input(example: Any) -> str:
    return example.input_id
