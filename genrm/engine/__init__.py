"""The judge engine: chat requests (messages, an optional image, an optional JSON schema, sampling) in, replies (text,
usage, failure) out, asynchronously, batched, bounded and retried. It knows nothing of any reward method.

- :mod:`genrm.engine.types`: the request, the reply, the :class:`Engine` protocol;
- :mod:`genrm.engine.spec`: which judge, in one spelling (:class:`JudgeSpec`), and its options (value objects);
- :mod:`genrm.engine.checkpoints`: which checkpoint folder or hub id a name means, and a run's last checkpoint;
- :mod:`genrm.engine.judge`: a judge, with its engine or none (``rule``), as reward methods are handed it, and the
  one factory that builds a judge's engine (:func:`make_engine`);
- :mod:`genrm.engine.http`: OpenAI-compatible endpoints (SGLang, vLLM, hosted teachers), over
  :mod:`genrm.engine.endpoint` (replicas, retries, time budgets);
- :mod:`genrm.engine.local`: a checkpoint in process, over :mod:`genrm.engine.generation` (XGrammar, prefix cache,
  images) and :mod:`genrm.engine.batching` (dynamic batching);
- :mod:`genrm.engine.scripted`: answers from a function, for tests;
- :mod:`genrm.engine.asking`: ask, read, re-sample what could not be read;
- :mod:`genrm.engine.blocking`: run it all from blocking code;
- :mod:`genrm.engine.images`: reading and bounding the images sent to a model.

Importing this package imports neither an HTTP client nor a model library.
"""

from genrm.engine.asking import Reader, ask, complete_text
from genrm.engine.blocking import run_blocking
from genrm.engine.judge import Judge, make_engine, make_judge
from genrm.engine.spec import EngineOptions, JudgeSpec
from genrm.engine.types import (
    BackendUnavailable,
    CallFailed,
    ChatPrompt,
    ChatRequest,
    Engine,
    Reply,
    SamplingSettings,
)

__all__ = [
    "BackendUnavailable",
    "CallFailed",
    "ChatPrompt",
    "ChatRequest",
    "Engine",
    "EngineOptions",
    "Judge",
    "JudgeSpec",
    "Reader",
    "Reply",
    "SamplingSettings",
    "ask",
    "complete_text",
    "make_engine",
    "make_judge",
    "run_blocking",
]
