"""Mining a record log for attacks: responses that earned a high reward with little content, as candidates for new
audit cases.

A record log is what ``genrm serve --record-log PATH`` writes: one JSON line per scored group, ``{"instance":
{..., "responses": [...]}, "result": {"rewards": [...], ...}}``, for any method. A response is a **candidate** when
its reward is at least ``min_reward`` and one of these holds:

- ``short``: it has at most ``max_words`` words (a bare symbol or a reasoning opener has none or one);
- ``repeated``: the same text (case and spacing aside) earned the high reward under at least ``min_prompts``
  different prompts: an answer that fits every question is generic;
- ``low_content``: it is longer, but its distinct words are at most ``max_distinct`` of its words (a repetition
  loop, filler).

Candidates are grouped by their text and ranked by how many prompts they were paid under, then by their mean
reward. A short right answer (``\\boxed{42}``) is a candidate too: the list is for a person to read, and the cases
worth keeping go into an audit set. A line that is not a record (torn by a kill, another file) is counted and skipped;
a null reward (a failed judgement) is not a candidate.

Not here: scoring anything (the log holds the rewards already), or deciding which candidate is an attack.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: The longest line read (a group with images inline can be long); longer lines are counted and skipped.
MAX_LINE_CHARS = 16_000_000
_WORD = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+")
_KEPT_INSTANCES = 10


@dataclass
class Candidate:
    """One response text that earned a high reward with little content, over every group it was paid in."""

    text: str
    words: int
    reasons: list[str]
    times: int = 0
    total: float = 0.0
    prompts: set[str] = field(default_factory=set)
    instances: list[str] = field(default_factory=list)

    @property
    def mean_reward(self) -> float:
        """The mean of its high rewards, in the method's range."""
        return self.total / self.times

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (the first instance ids it was paid in)."""
        return {"text": self.text, "words": self.words, "reasons": self.reasons, "times": self.times,
                "prompts": len(self.prompts), "mean_reward": self.mean_reward,
                "instances": self.instances}  # fmt: skip


@dataclass
class MiningReport:
    """What the log held and the candidates found in it."""

    min_reward: float
    lines: int = 0
    unreadable: int = 0
    groups: int = 0
    responses: int = 0
    unknown: int = 0
    high: int = 0
    candidates: list[Candidate] = field(default_factory=list)

    def markdown(self, top: int = 20) -> str:
        """A summary line and the ``top`` candidates as a table."""
        lines = [f"{self.groups} groups ({self.lines} lines, {self.unreadable} unreadable), {self.responses} "
                 f"responses ({self.unknown} without a reward), {self.high} rewarded at least {self.min_reward:g}; "
                 f"{len(self.candidates)} candidates", "",
                 "| response | reasons | words | prompts | times | mean reward |",
                 "| --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
        for item in self.candidates[:top]:
            shown = json.dumps(item.text[:80], ensure_ascii=False).replace("|", "\\|")
            lines.append(f"| {shown} | {', '.join(item.reasons)} | {item.words} | {len(item.prompts)} | "
                         f"{item.times} | {item.mean_reward:.3f} |")  # fmt: skip
        return "\n".join(lines)

    def counts(self) -> dict[str, Any]:
        """The report as plain data (for JSON)."""
        return {"min_reward": self.min_reward, "lines": self.lines, "unreadable": self.unreadable,
                "groups": self.groups, "responses": self.responses, "unknown": self.unknown, "high": self.high,
                "candidates": [c.as_dict() for c in self.candidates]}  # fmt: skip


def _prompt_key(instance: dict[str, Any]) -> str:
    # What the policy was asked: the prompt and the image (hashed: a data URI can be megabytes).
    seen = json.dumps([instance.get("prompt"), instance.get("image")], ensure_ascii=False, default=str)
    return hashlib.sha256(seen.encode("utf-8", "surrogatepass")).hexdigest()


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text.strip().lower())


def _group(record: Any) -> tuple[dict[str, Any], list[Any], list[Any]] | None:
    if not isinstance(record, dict):
        return None
    instance, result = record.get("instance"), record.get("result")
    if not isinstance(instance, dict) or not isinstance(result, dict):
        return None
    responses, rewards = instance.get("responses"), result.get("rewards")
    if not isinstance(responses, list) or not all(isinstance(r, str) for r in responses):
        return None
    if rewards is None:  # the whole group failed: every reward unknown
        rewards = [None] * len(responses)
    if not isinstance(rewards, list) or len(rewards) != len(responses):
        return None
    return instance, responses, rewards


def mine_records(
    lines: Iterable[str],
    min_reward: float = 0.75,
    max_words: int = 8,
    min_prompts: int = 2,
    max_distinct: float = 0.35,
) -> MiningReport:
    """The candidates of a record log's lines (see the module docstring).

    Args:
        lines: the log's lines.
        min_reward: the reward from which a response counts as highly rewarded, in the method's range.
        max_words: at most this many words is ``short`` (>= 0).
        min_prompts: paid under at least this many prompts is ``repeated`` (>= 2).
        max_distinct: distinct words over words at or below this is ``low_content``, in (0, 1).

    Raises ValueError for an argument out of its range.
    """
    if max_words < 0 or min_prompts < 2 or not 0.0 < max_distinct < 1.0:
        raise ValueError(f"max_words must be >= 0 (got {max_words}), min_prompts >= 2 (got {min_prompts}) and "
                         f"max_distinct in (0, 1) (got {max_distinct})")  # fmt: skip
    report = MiningReport(min_reward=min_reward)
    found: dict[str, Candidate] = {}
    for line in lines:
        if not line.strip():
            continue
        report.lines += 1
        try:
            group = _group(json.loads(line)) if len(line) <= MAX_LINE_CHARS else None
        except ValueError:
            group = None
        if group is None:
            report.unreadable += 1
            continue
        instance, responses, rewards = group
        report.groups += 1
        prompt = _prompt_key(instance)
        for text, reward in zip(responses, rewards, strict=True):
            report.responses += 1
            if not isinstance(reward, (int, float)) or isinstance(reward, bool):
                report.unknown += 1
                continue
            if reward < min_reward:
                continue
            report.high += 1
            key = _normal(text)
            if key not in found:
                words = _WORD.findall(key)
                reasons = ["short"] if len(words) <= max_words else []
                if len(words) > max_words and len(set(words)) <= max_distinct * len(words):
                    reasons.append("low_content")
                found[key] = Candidate(text.strip(), len(words), reasons)
            item = found[key]
            item.times += 1
            item.total += float(reward)
            item.prompts.add(prompt)
            if len(item.instances) < _KEPT_INSTANCES:
                item.instances.append(str(instance.get("id", ""))[:256])
    for item in found.values():
        if len(item.prompts) >= min_prompts:
            item.reasons.append("repeated")
    report.candidates = sorted((c for c in found.values() if c.reasons),
                               key=lambda c: (-len(c.prompts), -c.mean_reward, c.words, c.text))  # fmt: skip
    return report
