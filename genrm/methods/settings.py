"""The reward method a run uses and its settings, declared once for every entry point.

The reward server's settings (``genrm serve``: YAML, ``GENRM_*`` variables, options) hold these fields as their own
(:class:`serving.settings.ServerSettings` derives from :class:`RewardSettings`); ``genrm rl``'s recipe fields, TRL's
reward functions (from the environment: :func:`reward_settings_from_env`) and verl's reward keyword arguments take
the same names and defaults and are validated by this model, so a setting means one thing, and is refused with one
message, wherever it is given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from genrm.choices import Exposure
from genrm.methods.config import MethodConfig
from genrm.methods.registry import DEFAULT_METHOD, make_method
from genrm.settings_model import field_default, field_help, refuse_removed_variables, validated, validated_env

#: The environment variable each setting is read from by TRL's reward functions.
ENVIRONMENT = {"method": "GENRM_METHOD", "method_options": "GENRM_METHOD_OPTIONS", "exposure": "GENRM_EXPOSURE"}


class RewardSettings(BaseModel):
    """Which reward method, with which settings."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(
        DEFAULT_METHOD, min_length=1, max_length=64,
        description="the reward method (rubric, claimdiff, balcap, rubicap, pairwise, or a plug-in)",
    )  # fmt: skip
    method_options: dict[str, Any] = Field(
        default_factory=dict,
        description="settings of the reward method itself, a JSON object (genrm methods lists each method's), e.g. "
        '{"tau": 0.4} for the rubric method',
    )
    exposure: Exposure = Field("minimal", description="what a model judge sees of the targets")

    @field_validator("method_options", mode="before")
    @classmethod
    def _json_object(cls, value: Any) -> Any:
        # A flag, a variable or a recipe may give the options as JSON text.
        if value is None or value == "":
            return {}
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ValueError(f"must be a JSON object: {exc}") from None
            if not isinstance(value, dict):
                raise ValueError(f"must be a JSON object, not {type(value).__name__}")
        return value

    def make(self, config: MethodConfig | None = None) -> Any:
        """The method, configured (``config``: the common settings; by default these settings' exposure). Raises
        ValueError for an unknown method or option."""
        return make_method(self.method, config or MethodConfig(exposure=self.exposure), self.method_options)


def default(name: str) -> Any:
    """The default of the setting ``name`` (for an entry point that declares its own parameter of that name)."""
    return field_default(RewardSettings, name)


def describe(name: str) -> str:
    """The help text of the setting ``name``."""
    return field_help(RewardSettings, name)


def reward_settings(values: Mapping[str, Any], where: str = "") -> RewardSettings:
    """``values`` validated (None values left to their defaults); raises ValueError with one line naming the setting
    (``where`` says how it was given, e.g. ``verl's reward kwargs``)."""
    return validated(RewardSettings, values, where)


def reward_settings_from_env(environ: Mapping[str, str]) -> RewardSettings:
    """The settings TRL's reward functions read (:data:`ENVIRONMENT`); raises ValueError naming the variable."""
    refuse_removed_variables(environ)
    return validated_env(RewardSettings, environ, ENVIRONMENT)
