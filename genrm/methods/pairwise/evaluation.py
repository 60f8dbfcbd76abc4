"""Evaluating a pairwise judge (MJ1) on labelled pairs: accuracy, the rate of choosing position A, swap agreement,
R_cons and the image-condition diagnostic of MJ1's figure 4, over all pairs, per task family and per source.

Every pair is judged twice, as given and with its responses swapped (their images with them). Per image condition:

- **accuracy**: the share of judgements (both orders) that prefer the labelled response, failed ones left out (as
  MMRB2's own scorer counts);
- **A-rate**: the share of judgements that prefer whatever is in position A (0.5 for a judge without position bias on
  balanced data; 1.0 for one that always picks the first);
- **swap agreement** (label-free): the share of pairs judged in both orders whose two judgements prefer the same
  response, right or wrong;
- **R_cons** (label-aware, MJ1's consistency reward and its figure 4): the share of labelled pairs judged in both
  orders whose two judgements both prefer the labelled response (:func:`genrm.methods.pairwise.rewards.consistency`);
  a judge consistently wrong agrees with itself and earns no R_cons;
- failed judgements (no readable scores, a tie) counted apart, never as a choice.

Image conditions act on the prompt's images (the input a response is judged against): ``real`` (each pair's own),
``shuffled`` (each pair with another pair's prompt images: a seeded derangement over the pairs that have some) and
``blank`` (a grey square for each). A judge that reads them loses accuracy on shuffled and blank images; one that does
not, loses nothing, which is the point of looking. The responses' own images are never changed. Pairs without a
prompt image (text-to-image) are judged under ``real`` only.

The same figures are given per task family (``by_task``: MMRB2's per-task table) and per source (``by_source``, for
pairs that name one).

Not here: the judge (:mod:`genrm.engine`), the prompt and reader (:mod:`genrm.methods.pairwise`), reading MMRB2's
files (:mod:`genrm.methods.pairwise.mmrb2`).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from genrm.choices import IMAGE_CONDITIONS as CONDITIONS
from genrm.choices import ImageCondition as Condition
from genrm.engine import Judge, ask, run_blocking
from genrm.methods.pairwise.models import PairExample
from genrm.methods.pairwise.prompts import PromptMode, check_prompt_mode, pair_request
from genrm.methods.pairwise.reading import PairJudgement, judgement_reader
from genrm.methods.pairwise.rewards import consistency

#: Failure reasons kept per condition, the most frequent first.
_REASONS = 5


@dataclass(frozen=True)
class ConditionFigures:
    """One image condition's figures (rates are None when nothing was judged)."""

    condition: str
    pairs: int
    judgements: int
    failed: int
    accuracy: float | None
    a_rate: float | None
    swap_agreement: float | None
    r_cons: float | None
    failures: dict[str, int] = field(default_factory=dict)  # why judgements failed ("class: reason") -> how many
    group: str = "all"  # the pairs counted: all, or one task family's, or one source's


def blank_image() -> str:
    """A 64x64 mid-grey PNG as a data URI."""
    from PIL import Image

    from genrm.engine.images import png_data_uri

    return png_data_uri(Image.new("RGB", (64, 64), (128, 128, 128)))


def derangement(count: int, seed: int) -> list[int]:
    """A seeded permutation of ``range(count)`` that moves every index (count >= 2)."""
    if count < 2:
        raise ValueError("shuffling images needs at least two pairs with an image")
    rng = random.Random(seed)
    while True:
        order = list(range(count))
        rng.shuffle(order)
        if all(i != j for i, j in enumerate(order)):
            return order


def images_for(pairs: Sequence[PairExample], condition: Condition, seed: int = 0) -> list[list[str] | None]:
    """The prompt images each pair is shown under ``condition``: None for its own (``real``), another pair's
    (``shuffled``), or as many blank squares as it has (``blank``)."""
    if condition == "real":
        return [None] * len(pairs)
    if condition == "blank":
        blank = blank_image()
        return [[blank] * len(p.prompt_images()) for p in pairs]
    with_image = [i for i, p in enumerate(pairs) if p.prompt_images()]
    shown: list[list[str] | None] = [p.prompt_images() for p in pairs]
    for i, j in zip(with_image, derangement(len(with_image), seed), strict=True):
        shown[i] = pairs[with_image[j]].prompt_images()
    return shown


def figures(condition: str, pairs: Sequence[PairExample], judged: Sequence[tuple[PairJudgement, PairJudgement]],
            group: str = "all") -> ConditionFigures:  # fmt: skip
    """The figures of one condition from each pair's judgements (as given, swapped)."""
    choices: list[tuple[str, str | None]] = []  # (position chosen, labelled position)
    agreed = both = failed = 0
    r_cons: list[float] = []
    why: Counter[str] = Counter()
    for pair, (given, swapped) in zip(pairs, judged, strict=True):
        flipped = pair.swapped().label
        for judgement, label in ((given, pair.label), (swapped, flipped)):
            if judgement.preference is None:
                failed += 1
                why[f"{judgement.failure}: {judgement.reason}"[:300]] += 1
            else:
                choices.append((judgement.preference, label))
        if given.preference is not None and swapped.preference is not None:
            both += 1
            agreed += given.preference != swapped.preference  # the same response, in the other position
            if pair.label is not None:
                r_cons.append(consistency(given, swapped, pair.label))
    labelled = [(c, label) for c, label in choices if label is not None]
    return ConditionFigures(
        condition, len(pairs), len(choices) + failed, failed,
        sum(c == label for c, label in labelled) / len(labelled) if labelled else None,
        sum(c == "A" for c, _ in choices) / len(choices) if choices else None,
        agreed / both if both else None, sum(r_cons) / len(r_cons) if r_cons else None,
        dict(why.most_common(_REASONS)), group,
    )  # fmt: skip


def breakdown(condition: str, pairs: Sequence[PairExample], judged: Sequence[tuple[PairJudgement, PairJudgement]],
              key: Callable[[PairExample], str | None]) -> list[ConditionFigures]:  # fmt: skip
    """The figures of one condition for each value of ``key`` (pairs whose key is None are left out), in the order
    the values first appear."""
    groups: dict[str, list[int]] = {}
    for index, pair in enumerate(pairs):
        value = key(pair)
        if value is not None:
            groups.setdefault(value, []).append(index)
    return [figures(condition, [pairs[i] for i in members], [judged[i] for i in members], value)
            for value, members in groups.items()]  # fmt: skip


def _rows(figures: Sequence[ConditionFigures], grouped: bool) -> list[str]:
    head = "| task " if grouped else ""
    lines = [f"{head}| images | pairs | judgements | failed | accuracy | A-rate | swap agreement | R_cons |",
             "|---" * (grouped + 1) + "|---:" * 7 + "|"]  # fmt: skip
    for f in figures:
        rates = ["n/a" if v is None else f"{v:.3f}" for v in (f.accuracy, f.a_rate, f.swap_agreement, f.r_cons)]
        cell = f"| {f.group} " if grouped else ""
        lines.append(f"{cell}| {f.condition} | {f.pairs} | {f.judgements} | {f.failed} | {' | '.join(rates)} |")
    return lines


@dataclass
class PairReport:
    """The figures of every condition, over all pairs and per task family and per source."""

    conditions: list[ConditionFigures]
    by_task: list[ConditionFigures] = field(default_factory=list)
    by_source: list[ConditionFigures] = field(default_factory=list)

    def markdown(self) -> str:
        """The figures as a table, one row per condition; then per task family when the pairs have several."""
        lines = _rows(self.conditions, False)
        tasks = list(dict.fromkeys(f.group for f in self.by_task))  # in the order the pairs first show them
        if len(tasks) > 1:
            lines += ["", "By task:", "", *_rows(sorted(self.by_task, key=lambda f: tasks.index(f.group)), True)]
        reasons = [f"- {f.condition}: {count} x {reason}" for f in self.conditions for reason, count in
                   f.failures.items()]  # fmt: skip
        if reasons:
            lines += ["", "Why judgements failed (the most frequent reasons):", *reasons]
        return "\n".join(lines)

    def judged(self) -> tuple[int, int]:
        """(judgements read, judgements asked) over every condition."""
        asked = sum(f.judgements for f in self.conditions)
        return asked - sum(f.failed for f in self.conditions), asked

    def first_failure(self) -> str | None:
        """The most frequent reason a judgement failed under the first condition that has one."""
        return next((next(iter(f.failures)) for f in self.conditions if f.failures), None)

    def to_json(self) -> str:
        """The figures as JSON (``conditions``, ``by_task``, ``by_source``)."""
        return json.dumps({"conditions": [asdict(f) for f in self.conditions],
                           "by_task": [asdict(f) for f in self.by_task],
                           "by_source": [asdict(f) for f in self.by_source]}, indent=1)  # fmt: skip


def evaluate_pairs(
    pairs: Sequence[PairExample],
    judge: Judge,
    conditions: Sequence[str] = ("real",),
    seed: int = 0,
    prompt: PromptMode = "grounded",
) -> PairReport:
    """Judge every pair in both orders under each image condition (see the module docstring), asked with MJ1's
    grounded chain or open-ended (``prompt``: MJ1 table 1's baseline, to measure what the chain adds).

    Raises ValueError for an unknown condition, or shuffling with fewer than two pairs that have an image;
    ``genrm.engine.BackendUnavailable`` when the judge cannot be reached at all.
    """
    if judge.engine is None:
        raise ValueError("the pairwise judge is a model; 'rule' runs none")
    check_prompt_mode(prompt)
    if any(p.images() for p in pairs) and not judge.sees_images:
        raise ValueError(f"these pairs have images, and {judge.model} cannot see them")
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ValueError(f"unknown image condition {unknown[0]!r:.40}; known: {', '.join(CONDITIONS)}")
    report = PairReport([])
    for condition in conditions:
        chosen = list(pairs) if condition == "real" else [p for p in pairs if p.prompt_images()]
        shown = images_for(chosen, condition, seed)  # type: ignore[arg-type]
        requests = [pair_request(p, image, prompt) for p, image in zip(chosen, shown, strict=True)]
        requests += [pair_request(p.swapped(), image, prompt) for p, image in zip(chosen, shown, strict=True)]
        read = run_blocking(ask(judge.engine, requests, judgement_reader(), judge.parse_retries))
        judged = list(zip(read[: len(chosen)], read[len(chosen) :], strict=True))
        report.conditions.append(figures(condition, chosen, judged))
        report.by_task += breakdown(condition, chosen, judged, lambda p: p.family)
        report.by_source += breakdown(condition, chosen, judged, lambda p: p.source)
    return report
