"""Teachers: the models that write judge-training data for any method (rubrics, labels, abnormal responses, caption
rubrics), each an engine named in the one spelling of a judge (:class:`genrm.engine.JudgeSpec`): ``MODEL@URL[,URL...]``
(or ``openai:``/``sglang:`` before it) for OpenAI-compatible endpoints such as SGLang, ``transformers:PATH`` for a
checkpoint loaded here. A teacher answers greedily, with room for a whole rubric, and answers a chat prompt with JSON
of a given schema (:func:`complete_json`); a method judges through it with its own reader (the rubric method's:
:func:`genrm.methods.rubric.teachers.teacher_reader`).
"""

from __future__ import annotations

import os
from typing import Any

from genrm.choices import Device
from genrm.engine.asking import complete_text
from genrm.engine.judge import make_engine
from genrm.engine.spec import EngineOptions, JudgeSpec, SamplingSettings
from genrm.engine.types import ChatPrompt, ChatRequest, Engine

#: Teachers answer greedily (labels should not be noisy) with room for a whole rubric.
TEACHER_SAMPLING = SamplingSettings(max_tokens=4096)


def teacher_engine(
    spec: str,
    api_key_env: str | None = None,
    timeout_s: float = 300.0,
    max_in_flight: int = 32,
    device: Device = "auto",
    image_dir: str | None = None,
) -> Engine:
    """The teacher ``spec`` names; its API key, if any, comes from the environment variable ``api_key_env``.
    ``image_dir``: the folder the inputs' image paths are read from (the input file's), sent to the teacher as bytes.

    Raises ValueError for a malformed spec, the rule judge (a teacher runs a model), or a key variable that is unset.
    """
    parsed = JudgeSpec.parse(spec)
    if not parsed.takes_model:
        raise ValueError(f"a teacher is a model: MODEL@URL[,URL...] or transformers:PATH, not {parsed.backend}")
    api_key = os.environ.get(api_key_env) if api_key_env else None
    if api_key_env and not api_key:
        raise ValueError(f"the environment variable {api_key_env} (the teachers' API key) is not set")
    options = EngineOptions(TEACHER_SAMPLING, api_key=api_key, timeout_s=timeout_s, max_in_flight=max_in_flight,
                            device=device, image_dir=image_dir)  # fmt: skip
    return make_engine(parsed, options)


async def complete_json(teacher: Engine, prompt: ChatPrompt, schema: dict[str, Any], schema_name: str) -> str:
    """The teacher's answer to ``prompt``, constrained to ``schema`` where the engine can.

    Raises CallFailed (this call failed) or BackendUnavailable (the teacher cannot be reached).
    """
    return await complete_text(teacher, ChatRequest(prompt, schema, schema_name))
