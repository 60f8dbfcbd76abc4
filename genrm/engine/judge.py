"""Who judges: a model behind an engine, or no model at all (``rule``), and the one factory that builds a judge's
engine from its spec and options by its backend's row (:mod:`genrm.engine.backends`; light on purpose: the HTTP
client and the model libraries are imported only when an engine of theirs is built).

Every reward method is handed a :class:`Judge`. With an engine, the method asks it (:func:`genrm.engine.ask`); without
one, a method that has fixed-rule readers uses them, and one that has none refuses the judge when it is set up. This
module knows nothing of any method.
"""

from __future__ import annotations

from dataclasses import dataclass

from genrm.engine.backends import backend
from genrm.engine.spec import EngineOptions, JudgeSpec
from genrm.engine.types import Engine


def make_engine(spec: JudgeSpec, options: EngineOptions | None = None) -> Engine:
    """The engine of ``spec``, configured by ``options``.

    Raises:
        ValueError: ``spec`` is the rule judge (no model to run), or a checkpoint that cannot be loaded.
        OSError: a checkpoint that cannot be read.
    """
    return backend(spec.backend).make_engine(spec, options or EngineOptions())


@dataclass
class Judge:
    """A judge: its engine (None for ``rule``) and how often an answer that could not be read is asked for again.

    Attributes:
        engine: who answers; None when no model judges.
        parse_retries: new samples for an answer that could not be read (>= 0; 0 for evaluation, so that its tables
            measure first answers).
        label: the judge's name in reports (default: the engine's kind, e.g. ``sglang``, or ``rule``).
    """

    engine: Engine | None = None
    parse_retries: int = 1
    label: str | None = None

    def __post_init__(self) -> None:
        if self.parse_retries < 0:
            raise ValueError("parse_retries must be >= 0")

    @property
    def name(self) -> str:
        """The judge's name in health reports and records (``rule``, ``sglang``, ``transformers``, ...)."""
        return self.label or (self.engine.name if self.engine is not None else "rule")

    @property
    def model(self) -> str:
        """The model that judges: its served name or checkpoint path; ``rule`` when none."""
        return self.engine.model if self.engine is not None else "rule"

    @property
    def sees_images(self) -> bool:
        """Whether the judge's model is shown images (a judge without a model reads none, so nothing is hidden)."""
        return self.engine.sees_images if self.engine is not None else True

    async def health(self) -> tuple[bool, str]:
        """Whether the judge can judge now, and a short detail."""
        return await self.engine.health() if self.engine is not None else (True, "in process")

    async def aclose(self) -> None:
        """Release the engine."""
        if self.engine is not None:
            await self.engine.aclose()


def make_judge(spec: JudgeSpec | str, options: EngineOptions | None = None, parse_retries: int = 1) -> Judge:
    """The judge ``spec`` names (the one spelling, :class:`genrm.engine.JudgeSpec`), its engine made with ``options``.

    Raises ValueError for a malformed spec, a checkpoint that cannot be loaded, or the ``scripted`` judge (a reward
    method's own: ``genrm.methods.method_judge`` makes it).
    """
    spec = JudgeSpec.parse(spec) if isinstance(spec, str) else spec
    if not spec.needs_engine:
        return Judge(None, parse_retries)
    return Judge(make_engine(spec, options or EngineOptions()), parse_retries)
