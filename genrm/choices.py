"""The enumerations users choose from on the command line, in settings and in recipes: one definition each.

Light on purpose (nothing but ``typing``): the command line builds its parsers from here without importing model
code, and every module that takes one of these values imports its type from here. Validation of a value lives with
the code that uses it (``check_exposure``, pydantic fields typed with these literals).
"""

from __future__ import annotations

from typing import Literal, get_args

Exposure = Literal["minimal", "unlimited", "vlm", "no_verifier"]
"""What a model judge is shown of a rubric (see ``genrm.methods.rubric.prompts``)."""
EXPOSURES: tuple[Exposure, ...] = get_args(Exposure)

ScoringFormat = Literal["compact", "rlr3", "brief", "evidence"]
"""The version of a rubric judge's format, the rubric method's ``answer_format`` (see
``genrm.methods.rubric.models``): items matched by position, each copying its criterion first (RLR3 A.2), items
matched by position under a short system prompt (for small judges trained from scratch), or those with a quote from
the response as the evidence for each reference item's credit."""
SCORING_FORMATS: tuple[ScoringFormat, ...] = get_args(ScoringFormat)
DEFAULT_SCORING_FORMAT: ScoringFormat = "compact"

#: The group-wise remapping threshold of the rubric method's rewards (in (0, 1)), unless a setting gives another: the
#: default of its option ``tau`` (genrm.methods.rubric.method.RubricOptions).
DEFAULT_TAU = 0.5

#: Example groups judged at once by default (``genrm eval``, ``genrm audit run``, ``genrm data labels``): their
#: requests meet in the batches of a judge in process and are in flight together to a served one.
DEFAULT_CONCURRENCY = 8


def copies_criterion(answer_format: ScoringFormat) -> bool:
    """Whether each item of an answer in ``answer_format`` copies its criterion first (only ``rlr3``)."""
    return answer_format == "rlr3"


Grounding = Literal["on", "values", "off"]
"""What is checked of a model judge's answer against the response (``genrm.methods.rubric.execution``): extracted
values and, under the ``evidence`` format, the quotes for fuzzy credit (``on``, the default); the values alone
(``values``); nothing (``off``: what grounding changes is measured against this)."""
GROUNDINGS: tuple[Grounding, ...] = get_args(Grounding)


def grounding_checks(grounding: Grounding, answer_format: ScoringFormat) -> tuple[bool, bool]:
    """Whether values are looked for in the response, and whether fuzzy credit needs a quote of it, under
    ``grounding`` for a judge asked in ``answer_format``; ValueError for an unknown setting."""
    if grounding not in GROUNDINGS:
        raise ValueError(f"unknown grounding {grounding!r:.40}; valid: {', '.join(GROUNDINGS)}")
    return grounding != "off", grounding == "on" and quotes_evidence(answer_format)


def quotes_evidence(answer_format: ScoringFormat) -> bool:
    """Whether each reference item of an answer in ``answer_format`` quotes the response for its credit (only
    ``evidence``)."""
    return answer_format == "evidence"


def short_system_prompt(answer_format: ScoringFormat) -> bool:
    """Whether ``answer_format`` is asked for under the short system prompt (``brief`` and ``evidence``)."""
    return answer_format in ("brief", "evidence")


ImageCondition = Literal["real", "shuffled", "blank"]
"""What a pairwise judge is shown as the prompt's image in evaluation: the real one, another pair's, or a blank one."""
IMAGE_CONDITIONS: tuple[ImageCondition, ...] = get_args(ImageCondition)

ReferenceMetric = Literal["bleu4", "meteor", "rouge_l", "cider", "spice"]
"""A caption metric against reference captions (``genrm.evaluation.reference_metrics``)."""
REFERENCE_METRICS: tuple[ReferenceMetric, ...] = get_args(ReferenceMetric)

JudgedCaptionMetric = Literal["b_capscore", "dcscore", "precision", "recall", "linguistic"]
"""A caption metric a judge gives: b-CapScore, the DCScore-style F1, their parts (``genrm.evaluation.bcapscore``)."""
JUDGED_CAPTION_METRICS: tuple[JudgedCaptionMetric, ...] = get_args(JudgedCaptionMetric)

CAPTION_QA = "qa"
"""The caption evaluation's question-answering accuracy (``qa``, and ``qa@N`` with captions cut to N words)."""

BLIND_RANKING = "ranking"
"""The caption evaluation's blind ranking (``ranking``: its ``ranking_first`` and ``ranking_total`` figures)."""

PairPromptMode = Literal["grounded", "open"]
"""How the pairwise judge is asked: MJ1's grounded chain, or open-ended (MJ1 table 1's baseline: the same criteria and
scores, no chain)."""
PAIR_PROMPT_MODES: tuple[PairPromptMode, ...] = get_args(PairPromptMode)

SyntheticFamily = Literal["arithmetic", "choice", "ocr", "time", "parts", "grounding"]
"""A task family of the synthetic judge-training set (``genrm.methods.rubric.synthetic``), in the order
inputs take turns."""
SYNTHETIC_FAMILIES: tuple[SyntheticFamily, ...] = get_args(SyntheticFamily)

BenchmarkTask = Literal["t2i", "image", "edit", "interleaved", "reasoning"]
"""A task of MMRB2 (its task files' stems, and ``image``, its scorer's name for text-to-image), each read as one of the
pairwise method's task families (``genrm.methods.pairwise.mmrb2``)."""
BENCHMARK_TASKS: tuple[BenchmarkTask, ...] = get_args(BenchmarkTask)

Dtype = Literal["auto", "float32", "bfloat16", "float16"]
"""Weight dtype of a model run in process (``auto``: bfloat16 on CUDA, float32 on CPU)."""
DTYPES: tuple[Dtype, ...] = get_args(Dtype)

Device = Literal["auto", "cpu", "cuda"]
"""Where a model run in process goes (``auto``: CUDA when there is one)."""
DEVICES: tuple[Device, ...] = get_args(Device)


def check_choice(what: str, value: object, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``; raises ValueError naming ``what`` and the valid ones otherwise."""
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r:.40}; valid: {', '.join(choices)}")
    return value  # type: ignore[return-value]


def check_exposure(exposure: str) -> Exposure:
    """``exposure`` when it is one of :data:`EXPOSURES`; raises ValueError naming the valid ones otherwise."""
    return check_choice("exposure", exposure, EXPOSURES)  # type: ignore[return-value]


def check_scoring_format(answer_format: str) -> ScoringFormat:
    """``answer_format`` when it is one of :data:`SCORING_FORMATS`; raises ValueError naming them otherwise."""
    return check_choice("answer_format", answer_format, SCORING_FORMATS)  # type: ignore[return-value]
