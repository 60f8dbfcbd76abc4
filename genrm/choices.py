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

JudgeBackend = Literal["rule", "transformers", "openai", "sglang"]
"""Where judgements come from: fixed rules, a checkpoint in process, or an OpenAI-compatible or SGLang endpoint."""
JUDGE_BACKENDS: tuple[JudgeBackend, ...] = get_args(JudgeBackend)

Dtype = Literal["auto", "float32", "bfloat16", "float16"]
"""Weight dtype of a model run in process (``auto``: bfloat16 on CUDA, float32 on CPU)."""
DTYPES: tuple[Dtype, ...] = get_args(Dtype)

Device = Literal["auto", "cpu", "cuda"]
"""Where a model run in process goes (``auto``: CUDA when there is one)."""
DEVICES: tuple[Device, ...] = get_args(Device)


def check_exposure(exposure: str) -> Exposure:
    """``exposure`` when it is one of :data:`EXPOSURES`; raises ValueError naming the valid ones otherwise."""
    if exposure not in EXPOSURES:
        raise ValueError(f"unknown exposure {exposure!r:.40}; valid: {', '.join(EXPOSURES)}")
    return exposure  # type: ignore[return-value]
