"""Where a policy trainer's rewards are judged, declared once for ``genrm rl``, TRL's reward functions and verl.

:class:`JudgeSettings` holds the judge setting (a reward server URL, or a judge run in the trainer's process), its
key, device and image settings. ``genrm rl``'s recipe fields take their names, defaults and help from it, TRL's reward
functions read it from the environment (:data:`ENVIRONMENT`) and verl's reward keyword arguments of the same names
are validated by it, so a bad value is one line naming the setting (or the variable) wherever it was given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from genrm.choices import Device
from genrm.engine.images import DEFAULT_IMAGE_BUDGET, image_budget
from genrm.methods import RewardMethod
from genrm.settings_model import field_default, field_help, validated, validated_env

#: The environment variable each setting is read from by TRL's reward functions (the key itself, not its variable).
ENVIRONMENT = {"judge": "GENRM_JUDGE", "api_key": "GENRM_JUDGE_API_KEY", "judge_device": "GENRM_JUDGE_DEVICE",
               "image_dir": "GENRM_IMAGE_DIR", "judge_image_pixels": "GENRM_JUDGE_IMAGE_PIXELS"}  # fmt: skip


class JudgeSettings(BaseModel):
    """The judge a policy's completions are scored by, and how it is reached."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judge: str = Field(
        "rule", min_length=1, max_length=4096,
        description="a reward server URL (http://HOST:PORT), or a judge run from here: rule, transformers:PATH, "
        "sglang:MODEL@URL or openai:MODEL@URL",
    )  # fmt: skip
    api_key: SecretStr | None = Field(None, description="the key of the reward server (or of the judge endpoint)")
    judge_device: Device = Field("auto", description="where a checkpoint run from here runs: auto, cpu or cuda")
    image_dir: str | None = Field(
        None, description="the folder the instances' image paths are read from by a judge run from here, which sends "
        "the judge their bytes (never the path); a reward server reads images itself",
    )  # fmt: skip
    judge_image_pixels: int = Field(
        DEFAULT_IMAGE_BUDGET,
        description="most pixels of an image a judge run from here is shown; larger ones are scaled down (0: every "
        "image at its own size; a reward server applies its own)",
    )  # fmt: skip

    @field_validator("judge_image_pixels", mode="before")
    @classmethod
    def _pixels(cls, value: Any) -> int:
        return image_budget(value) or 0  # its message is named by the caller: the field, or the variable

    def scorer(self, method: RewardMethod) -> Any:
        """The scorer these settings name for ``method`` (:func:`policy_rl.scorers.make_scorer`); raises ValueError
        for a judge of neither form, a checkpoint that cannot be loaded, or one that cannot judge for the method."""
        from policy_rl.scorers import make_scorer

        key = self.api_key.get_secret_value() if self.api_key else None
        return make_scorer(self.judge, method, key, self.judge_device, image_dir=self.image_dir,
                           image_budget=self.judge_image_pixels or None)  # fmt: skip


def default(name: str) -> Any:
    """The default of the judge setting ``name``."""
    return field_default(JudgeSettings, name)


def describe(name: str) -> str:
    """The help text of the judge setting ``name``."""
    return field_help(JudgeSettings, name)


def judge_settings(
    values: Mapping[str, Any], where: str = "", api_key_env: str | None = None, key_field: str = "api_key_env"
) -> JudgeSettings:
    """``values`` validated, the key read from the environment variable ``api_key_env`` when one is named (the
    setting ``key_field`` named it); raises ValueError with one line naming the setting, or the variable named that
    the environment does not have."""
    values = dict(values)
    if api_key_env:
        if api_key_env not in os.environ:
            raise ValueError(f"{where + ': ' if where else ''}{key_field}: the environment has no {api_key_env}")
        values["api_key"] = os.environ[api_key_env]
    return validated(JudgeSettings, values, where)


def judge_settings_from_env(environ: Mapping[str, str]) -> JudgeSettings:
    """The judge settings TRL's reward functions read (:data:`ENVIRONMENT`); raises ValueError naming the variable."""
    return validated_env(JudgeSettings, environ, ENVIRONMENT)
