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

from genrm.choices import DEFAULT_TAU, Exposure
from genrm.methods.config import MethodConfig, options_with_tau
from genrm.methods.registry import DEFAULT_METHOD, make_method
from genrm.settings_model import field_default, field_help, validated, validated_env

#: The environment variable each setting is read from by TRL's reward functions.
ENVIRONMENT = {"method": "GENRM_METHOD", "method_options": "GENRM_METHOD_OPTIONS", "exposure": "GENRM_EXPOSURE",
               "tau": "GENRM_TAU"}  # fmt: skip


class RewardSettings(BaseModel):
    """Which reward method, with which settings."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(
        DEFAULT_METHOD, min_length=1, max_length=64,
        description="the reward method (rubric, claimdiff, balcap, rubicap, pairwise, or a plug-in)",
    )  # fmt: skip
    method_options: dict[str, Any] = Field(
        default_factory=dict, description="settings of the reward method itself, a JSON object (see its documentation)"
    )
    exposure: Exposure = Field("minimal", description="what a model judge sees of the targets")
    tau: float | None = Field(
        None, gt=0.0, lt=1.0, description=f"the rubric method's remapping threshold (default: {DEFAULT_TAU})"
    )

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

    def method_settings(self) -> dict[str, Any]:
        """The method's own settings: ``method_options``, with ``tau`` when it is set (the rubric's threshold)."""
        return options_with_tau(self.method_options, self.tau)

    def make(self, config: MethodConfig | None = None) -> Any:
        """The method, configured (``config``: the common settings; by default these settings' exposure). Raises
        ValueError for an unknown method or option."""
        return make_method(self.method, config or MethodConfig(exposure=self.exposure), self.method_settings())


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
    return validated_env(RewardSettings, environ, ENVIRONMENT)
