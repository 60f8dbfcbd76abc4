"""Pairs from a benchmark file in MMRB2's layout (Multimodal RewardBench 2): one JSON object per task file,

    {"pairs": [{"id": str,
                "prompt_content": [["image", "input_images/..."], ["text", "..."]],
                "response_a": {"model_name": str, "response_content": [["image", "images/..."], ["text", "..."]]},
                "response_b": {...},
                "chosen": "A"|"B",
                "prompt_source": str, ...}]}

with image paths relative to the file's folder. The task is the file's: ``t2i.json``, ``edit.json``,
``interleaved.json``, ``reasoning.json`` (or named with ``task``), each the pairwise method's task family of the
same name (:data:`TASKS`). The label is ``chosen`` (the released files' key; ``human_preference``, the key the
benchmark's README shows, is read when ``chosen`` is absent); ``prompt_source`` becomes the pair's source, for the
per-source breakdown. The benchmark's other keys (annotations, metadata, model names) are not used and are ignored,
so a later release that adds keys still reads. Scoring follows the benchmark's own: each pair judged in both orders,
accuracy over the judgements made, failed ones left out (:mod:`genrm.methods.pairwise.evaluation`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from genrm.choices import BenchmarkTask
from genrm.jsonl import first_error, read_models
from genrm.methods.pairwise.models import Family, PairExample, Part

#: MMRB2's task names (:data:`genrm.choices.BENCHMARK_TASKS`) -> the task family.
TASKS: dict[BenchmarkTask, Family] = {
    "t2i": "text_to_image", "image": "text_to_image", "edit": "image_editing", "interleaved": "interleaved",
    "reasoning": "reasoning",
}  # fmt: skip
#: The largest benchmark file read (MMRB2's largest task file is under 2 MB; images are files beside it).
MAX_FILE_BYTES = 200_000_000


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")

    response_content: list[Part] = Field(min_length=1)


class _Pair(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | int
    prompt_content: list[Part] = Field(min_length=1)
    response_a: _Response
    response_b: _Response
    chosen: Literal["A", "B"] | None = None
    human_preference: Literal["A", "B"] | None = None
    prompt_source: str | None = None


def task_of(path: str | Path, task: str | None = None) -> Family:
    """The task family of a benchmark file: ``task`` when given, else the file's stem (``t2i``, ``edit``, ...).

    Raises ValueError naming the known tasks when neither names one."""
    name = task if task is not None else Path(path).stem
    if name not in TASKS:
        where = f"task {name!r:.40}" if task is not None else f"{Path(path).name}: its name"
        raise ValueError(f"{where} is not one of MMRB2's tasks ({', '.join(TASKS)}); name the task")
    return TASKS[name]  # type: ignore[index]


def is_benchmark_file(path: str | Path) -> bool:
    """Whether ``path`` is a benchmark file in this layout (a ``.json`` file) rather than a pairs JSONL."""
    return Path(path).suffix.lower() == ".json"


def read_benchmark(path: str | Path, task: str | None = None) -> list[PairExample]:
    """The pairs of one benchmark file, with the task's family (see the module docstring).

    Raises ValueError naming the file (and the pair, by its position and id) for a file too large, not JSON, not
    in this layout, or a pair the pairwise method refuses (an unknown part kind, too many images, ...).
    """
    path = Path(path)
    family = task_of(path, task)
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_FILE_BYTES // 1_000_000} MB")
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("pairs"), list):
        raise ValueError(f'{path}: not MMRB2\'s layout (an object whose "pairs" is a list)')
    pairs = []
    for number, item in enumerate(document["pairs"], 1):
        name = item.get("id") if isinstance(item, dict) else None
        try:
            raw = _Pair.model_validate(item)
            pairs.append(PairExample(
                id=str(raw.id), prompt=raw.prompt_content, response_a=raw.response_a.response_content,
                response_b=raw.response_b.response_content, family=family,
                label=raw.chosen if raw.chosen is not None else raw.human_preference, source=raw.prompt_source,
            ))  # fmt: skip
        except ValidationError as exc:
            raise ValueError(f"{path}: pair {number} ({str(name)[:80]}): {first_error(exc, 'pair')}") from None
    return pairs


def read_pairs(path: str | Path, task: str | None = None) -> list[PairExample]:
    """The pairs of a file: a benchmark file in this layout (``.json``, see :func:`read_benchmark`), else a pairs
    JSONL (:class:`PairExample` per line; ``task`` does not apply to one).

    Raises ValueError naming the file and the line (or pair) that is refused, or a task given for a JSONL.
    """
    if is_benchmark_file(path):
        return read_benchmark(path, task)
    if task is not None:
        raise ValueError(f"{path}: a task is named for MMRB2's .json files; a pairs JSONL gives each pair's family")
    with open(path, encoding="utf-8") as source:
        return read_models(source, PairExample, str(path))
