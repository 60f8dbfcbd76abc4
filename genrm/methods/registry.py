"""Which reward methods there are, by name, and the one factory that configures one.

The methods shipped with the stack are listed in :data:`BUILTIN`; a method in another package registers itself under
the ``genrm.methods`` entry-point group of its package metadata::

    [project.entry-points."genrm.methods"]
    my_method = "my_package.my_method:MyMethod"

An entry is a factory ``factory(config: MethodConfig, options: OptionsModel) -> RewardMethod`` (a class whose
constructor takes those two, typically) that declares its options model as ``factory.options_model`` (a
:class:`genrm.methods.options.MethodOptions` subclass): the registry validates a method's options against it, once,
whatever the way in. A method's module is imported only when the method is used.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Mapping
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any

from genrm.methods.base import (
    AnswersJudgePayloads,
    AuditsWithSets,
    CountsPolicyTokens,
    HasScriptedJudge,
    NamesAnswerTexts,
    RewardMethod,
    TrainsItsJudge,
)
from genrm.methods.columns import HasRewardColumns, PenalizesAdvantages
from genrm.methods.config import MethodConfig
from genrm.methods.group_rewards import RewardsOverGroups
from genrm.methods.options import MethodOptions, describe_options, validate_options

#: The entry-point group third-party methods register under.
ENTRY_POINT_GROUP = "genrm.methods"

#: The methods shipped with the stack: name -> ``module:factory``.
BUILTIN: dict[str, str] = {
    "rubric": "genrm.methods.rubric.method:RubricMethod",
    "claimdiff": "genrm.methods.claimdiff.method:ClaimDiffMethod",
    "balcap": "genrm.methods.balcap.method:BalCapMethod",
    "rubicap": "genrm.methods.rubicap.method:RubiCapMethod",
    "pairwise": "genrm.methods.pairwise.method:PairwiseMethod",
    "holistic": "genrm.methods.baselines.holistic:HolisticMethod",
    "rouge_l": "genrm.methods.baselines.rouge_l:RougeLMethod",
}

#: The method used when none is named.
DEFAULT_METHOD = "rubric"

#: What a method may also do; the stack checks for each with ``isinstance`` and otherwise goes without it.
CAPABILITIES: tuple[type, ...] = (
    HasScriptedJudge,
    AnswersJudgePayloads,
    AuditsWithSets,
    TrainsItsJudge,
    CountsPolicyTokens,
    NamesAnswerTexts,
    HasRewardColumns,
    PenalizesAdvantages,
    RewardsOverGroups,
)

MethodFactory = Callable[[MethodConfig, MethodOptions], RewardMethod]


@lru_cache(maxsize=1)
def _plugins() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN}


def method_names() -> list[str]:
    """The names of every method that can be used: the built-in ones, then the plug-ins installed."""
    return [*BUILTIN, *sorted(_plugins())]


def _factory(name: str) -> MethodFactory:
    target = BUILTIN.get(name) or _plugins().get(name)
    if target is None:
        raise ValueError(f"unknown reward method {name!r:.60}; known: {', '.join(method_names())}")
    module_name, _, attribute = target.partition(":")
    factory = importlib.import_module(module_name)
    for part in attribute.split("."):
        factory = getattr(factory, part)
    return factory  # type: ignore[return-value]


def options_model(name: str) -> type[MethodOptions]:
    """The options model of the method registered as ``name``; raises ValueError for an unknown name or a factory
    that declares none."""
    return _options_model(name, _factory(name))


def _options_model(name: str, factory: MethodFactory) -> type[MethodOptions]:
    model = getattr(factory, "options_model", None)
    if not (isinstance(model, type) and issubclass(model, MethodOptions)):
        raise ValueError(f"the method {name!r} declares no options model: its factory needs an options_model, a "
                         "subclass of genrm.methods.options.MethodOptions")  # fmt: skip
    return model


def describe_method(name: str) -> dict[str, Any]:
    """What ``genrm methods`` lists of the method registered as ``name``: its ``name``, its ``factory``
    (``module:attribute``), whether it is a ``plugin``, the first clause of its module's docstring (``summary``)
    and its ``options`` (:func:`genrm.methods.options.describe_options`). Raises ValueError for an unknown name."""
    factory = _factory(name)
    model = _options_model(name, factory)
    module = sys.modules.get(getattr(factory, "__module__", ""))
    doc = " ".join(((module.__doc__ if module else None) or factory.__doc__ or "").split())
    plain = re.sub(r":\w+:`~?([^`]*)`", r"\1", doc).replace("``", "")  # reST roles and literals as plain text
    summary = plain.split(". ", 1)[0].split("; ", 1)[0].rstrip(".")
    return {"name": name, "factory": BUILTIN.get(name) or _plugins()[name], "plugin": name not in BUILTIN,
            "summary": summary, "options": describe_options(model)}  # fmt: skip


def make_method(
    name: str = DEFAULT_METHOD,
    config: MethodConfig | None = None,
    options: Mapping[str, Any] | MethodOptions | None = None,
) -> RewardMethod:
    """The method registered as ``name``, configured with the common ``config`` and its own ``options`` (a mapping,
    validated by the method's options model, or a value of that model).

    Raises ValueError for an unknown name or options the method does not take (one line naming the option).
    """
    factory = _factory(name)
    method = factory(config or MethodConfig(), validate_options(name, _options_model(name, factory), options))
    if method.name != name:
        raise ValueError(f"the factory registered as {name!r} made the method {method.name!r}")
    _refuse_half_capabilities(method)
    return method


def _members(protocol: type) -> list[str]:
    # typing.get_protocol_members is Python 3.13's; a protocol's own public methods and annotated attributes are it.
    names = {n for n in vars(protocol) if not n.startswith("_")} | set(getattr(protocol, "__annotations__", {}))
    return sorted(names)


def _refuse_half_capabilities(method: RewardMethod) -> None:
    """Raise ValueError when ``method`` has some of a capability's members but not all: ``isinstance`` then says no
    and the stack goes without what the method meant to do (a plug-in's advantage penalty dropped without a word,
    its reward columns never read), which would change rewards silently."""
    for capability in CAPABILITIES:
        members = _members(capability)
        present = [m for m in members if hasattr(method, m)]
        if present and len(present) < len(members):
            missing = [m for m in members if m not in present]
            raise ValueError(
                f"the method {method.name!r} has {', '.join(present)} but not {', '.join(missing)}: "
                f"{capability.__name__} needs all of them, and without the rest the stack would ignore it "
                f"({capability.__module__}.{capability.__name__})"
            )
