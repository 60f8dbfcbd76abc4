"""The settings every reward method is given, whatever it is (a method uses those that apply to it).

Method-specific settings are the method's own: its options model (:mod:`genrm.methods.options`), validated by
:func:`genrm.methods.make_method`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from genrm.choices import Exposure, check_exposure
from genrm.methods.format_checks import FormatConfig
from verifiers import VerifyConfig

#: The exposures a method takes whose judge sees everything it rules on by design (the image and both sides of a
#: comparison): ``minimal`` and ``vlm`` mean the same for it, and the others would change nothing.
OPEN_EXPOSURES = ("minimal", "vlm")


def check_open_exposure(method: str, exposure: str, shown: str) -> None:
    """Raise ValueError for an exposure that means nothing to ``method``, whose judge is shown ``shown`` whatever
    the exposure (the message names the exposures that do)."""
    if exposure not in OPEN_EXPOSURES:
        raise ValueError(f"the {method} method shows its judge {shown}; the {exposure} exposure means nothing for it "
                         f"(use {' or '.join(OPEN_EXPOSURES)})")  # fmt: skip


@dataclass(frozen=True)
class MethodConfig:
    """How rewards are computed, for any method.

    Attributes:
        exposure: what a model judge sees of the targets (``minimal`` for training rewards).
        format: thresholds of the response format detectors; ``check_format=False`` turns the format mask off.
        verify: the verifiers' deadline and bounds.
    """

    exposure: Exposure = "minimal"
    format: FormatConfig = field(default_factory=FormatConfig)
    check_format: bool = True
    verify: VerifyConfig = field(default_factory=VerifyConfig)

    def __post_init__(self) -> None:
        check_exposure(self.exposure)
