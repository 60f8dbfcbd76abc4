"""The reward method and judge a server's settings name, made the same way by the server and its worker processes."""

from __future__ import annotations

from genrm.engine.judge import Judge
from genrm.methods import RewardMethod, method_judge
from serving.settings import ServerSettings


def make_server_judge(settings: ServerSettings, method: RewardMethod | None = None) -> Judge:
    """The judge ``settings`` name (:func:`genrm.methods.method_judge`; ``scripted`` is ``method``'s scripted judge,
    the method the settings name by default); raises ValueError when it cannot judge for the method, or cannot serve
    the configured exposure (a text-only checkpoint under ``vlm``)."""
    method = method or make_server_method(settings)
    judge = method_judge(method, settings.judge, settings.engine_options(), parse_retries=1)
    if settings.exposure == "vlm" and not judge.sees_images:
        raise ValueError(
            f"{judge.model} is a text-only judge (no image processor), but the vlm exposure shows it images: "
            "serve a vision-language checkpoint, or another exposure"
        )
    return judge


def make_server_method(settings: ServerSettings) -> RewardMethod:
    """The reward method ``settings`` name, configured by them (``ServerSettings.method_config`` and the method's own
    ``method_options``). Raises ValueError for an unknown method or option."""
    return settings.make(settings.method_config())
