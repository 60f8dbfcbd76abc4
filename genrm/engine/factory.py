"""The one factory that builds a judge's engine from its spec and options, by its backend's row
(:mod:`genrm.engine.backends`).

Light on purpose: the HTTP client and the model libraries are imported only when an engine of theirs is built.
"""

from __future__ import annotations

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
