"""The reference metrics caption papers report (BLEU-4, METEOR, ROUGE-L, CIDEr, SPICE), computed by the COCO caption
evaluation code (``pycocoevalcap``, extra ``captions``), the implementation those papers' numbers come from.

Each metric is the library's corpus figure over one system's captions (its per-caption figures alongside): BLEU-4
with COCO's closest-reference brevity penalty, METEOR 1.5, ROUGE-L as an F-measure with beta 1.2, CIDEr-D (the
library's ``Cider``: its document frequencies come from the references of the captions scored), SPICE's F-score.
Values are on the library's scale (CIDEr-D up to 10; the others in [0, 1]); papers often print them times 100.

What each needs, and what happens without it (a metric that cannot run is skipped with the reason, never scored 0):

- **Java** (``java`` on the PATH): the Stanford PTB tokenizer the library lowercases and cuts punctuation with, METEOR
  and SPICE. Without Java, BLEU-4, ROUGE-L and CIDEr-D are computed on a plain tokenization (lowercase, runs of
  letters and digits) and the report says so: close to, but not comparable with, published COCO figures; METEOR and
  SPICE are skipped.
- **SPICE** also needs Stanford CoreNLP 3.6.0, which the library downloads into its own folder at first use; nothing
  is downloaded here, so SPICE is skipped until it is there (see :data:`SPICE_SETUP`).

The library's Java steps have no time limit of their own; a caption file is the user's own, read once.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genrm.choices import REFERENCE_METRICS
from genrm.methods.baselines.rouge_l import plain_tokens

#: How each reference metric is printed.
TITLES: dict[str, str] = {"bleu4": "BLEU-4", "meteor": "METEOR", "rouge_l": "ROUGE-L", "cider": "CIDEr-D",
                          "spice": "SPICE"}  # fmt: skip
#: How to make SPICE runnable (on a machine with a network, once).
SPICE_SETUP = ("python -c 'from pycocoevalcap.spice.get_stanford_models import get_stanford_models; "
               "get_stanford_models()'")  # fmt: skip
_NEEDS_JAVA = {"meteor", "spice"}


@dataclass(frozen=True)
class MetricScore:
    """One metric over one system: the corpus figure and each caption's, in the order the captions were given."""

    value: float
    per_caption: list[float]


def _library() -> Path | None:
    try:  # a namespace package: its folder is found through a module of it
        from pycocoevalcap.tokenizer import ptbtokenizer
    except ImportError:
        return None
    return Path(ptbtokenizer.__file__).parents[1]


def has_java() -> bool:
    """Whether a ``java`` executable is on the PATH."""
    return shutil.which("java") is not None


def unavailable(metric: str) -> str | None:
    """Why ``metric`` cannot run on this machine, or None when it can."""
    library = _library()
    if library is None:
        return "needs pycocoevalcap: pip install 'genrm[captions]'"
    if metric in _NEEDS_JAVA and not has_java():
        return "needs Java (a java executable on the PATH)"
    if metric == "spice":
        jars = [library / "spice" / "lib" / name for name in ("stanford-corenlp-3.6.0.jar",
                                                              "stanford-corenlp-3.6.0-models.jar")]  # fmt: skip
        if not all(jar.is_file() for jar in jars):
            return f"needs Stanford CoreNLP 3.6.0 beside pycocoevalcap, which is not downloaded here: {SPICE_SETUP}"
    return None


def tokenizer_name() -> str:
    """The tokenizer the figures are computed on: ``ptb`` (with Java) or ``plain``."""
    return "ptb" if has_java() else "plain"


class ToolFailed(RuntimeError):
    """The library's Java tool failed (its error output is in the message)."""


@contextlib.contextmanager
def _java_output() -> Iterator[None]:
    # The library prints progress on standard output, and its Java tools write to the process's standard error: both
    # are kept off the user's terminal (a report may go to standard output), and Java's output is kept for a failure.
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured, contextlib.redirect_stdout(io.StringIO()):
        os.dup2(captured.fileno(), 2)
        try:
            yield
        except Exception as exc:
            os.dup2(saved, 2)
            captured.seek(0)
            tail = captured.read()[-600:].decode("utf-8", "replace").strip()
            raise ToolFailed(f"{type(exc).__name__}: {exc}" + (f" (Java said: {tail})" if tail else "")) from None
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _tokenized(texts: Mapping[Any, Sequence[str]]) -> dict[Any, list[str]]:
    # key -> its texts, tokenized as the COCO evaluation does (PTB, lowercased, punctuation cut), or plainly.
    if not has_java():
        return {key: [plain_tokens(t) for t in values] for key, values in texts.items()}
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    # One text per line for the tokenizer: a line break inside one would split it.
    lines = {key: [{"caption": " ".join(t.split())} for t in values] for key, values in texts.items()}
    tokens = PTBTokenizer().tokenize(lines)
    out = {}
    for key, values in texts.items():
        got = tokens.get(key, [])
        # The library strips the trailing line breaks of its input, so blank texts at the very end come back missing.
        if len(got) < len(values) and all(not t.strip() for t in values[len(got) :]):
            got = got + [""] * (len(values) - len(got))
        if len(got) != len(values):
            raise ToolFailed(f"the PTB tokenizer returned {len(got)} lines for {len(values)} texts of {key}")
        out[key] = got
    return out


def _scorer(metric: str) -> Any:
    if metric == "bleu4":
        from pycocoevalcap.bleu.bleu import Bleu

        return Bleu(4)
    if metric == "meteor":
        from pycocoevalcap.meteor.meteor import Meteor

        return Meteor()
    if metric == "rouge_l":
        from pycocoevalcap.rouge.rouge import Rouge

        return Rouge()
    if metric == "cider":
        from pycocoevalcap.cider.cider import Cider

        return Cider()
    from pycocoevalcap.spice.spice import Spice

    return Spice()


def _close(scorer: Any) -> None:
    # METEOR keeps a Java process open until the object is collected: end it now.
    process = getattr(scorer, "meteor_p", None)
    if process is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
        process.kill()
        process.wait()


def _figures(metric: str, result: tuple[Any, Any]) -> MetricScore:
    value, per = result
    if metric == "bleu4":  # BLEU-1 to BLEU-4, each with its per-caption list
        return MetricScore(float(value[3]), [float(v) for v in per[3]])
    if metric == "spice":
        return MetricScore(float(value), [float(item["All"]["f"]) for item in per])
    return MetricScore(float(value), [float(v) for v in per])


def reference_scores(
    references: Mapping[str, Sequence[str]], systems: Mapping[str, Mapping[str, str]], metrics: Sequence[str]
) -> tuple[dict[str, dict[str, MetricScore]], dict[str, str]]:
    """Score each system's captions (system -> key -> caption) against ``references`` (key -> one or more reference
    captions; every key of a system must have them) with each of ``metrics``: one tokenizer run and one scorer per
    metric for all systems.

    Returns ``(scores, failed)``: system -> metric -> its figures for each metric that ran, and the reason of each
    metric that could not (unavailable here, or the library failed). Raises ValueError when a caption has no
    reference, a reference is blank, or a metric is unknown."""
    unknown = [m for m in metrics if m not in REFERENCE_METRICS]
    if unknown:
        raise ValueError(f"unknown reference metric {', '.join(unknown)}; known: {', '.join(REFERENCE_METRICS)}")
    if any(key not in references for captions in systems.values() for key in captions):
        raise ValueError("every caption needs its references, under the same key")
    if any(not refs or any(not r.strip() for r in refs) for refs in references.values()):
        raise ValueError("every caption needs at least one reference, and no reference may be blank")
    failed = {m: why for m in metrics if (why := unavailable(m)) is not None}
    wanted = [m for m in metrics if m not in failed]
    scores: dict[str, dict[str, MetricScore]] = {name: {} for name in systems}
    live = {name: captions for name, captions in systems.items() if captions}
    if not wanted or not live:
        return scores, failed
    texts: dict[Any, list[str]] = {("ref", key): list(refs) for key, refs in references.items()}
    texts |= {(name, key): [caption] for name, captions in live.items() for key, caption in captions.items()}
    try:
        with _java_output():
            tokens = _tokenized(texts)
    except ToolFailed as exc:
        return scores, {**failed, **{m: f"the tokenizer failed: {exc}" for m in wanted}}
    for metric in wanted:
        scorer = None
        try:
            with _java_output():
                scorer = _scorer(metric)
                for name, captions in live.items():
                    gts = {key: tokens[("ref", key)] for key in captions}
                    res = {key: tokens[(name, key)] for key in captions}
                    scores[name][metric] = _figures(metric, scorer.compute_score(gts, res))
        except ToolFailed as exc:  # a library or Java failure is this metric's, reported, never a 0
            failed[metric] = str(exc)
            for name in live:
                scores[name].pop(metric, None)
        finally:
            if scorer is not None:
                _close(scorer)
    return scores, failed
