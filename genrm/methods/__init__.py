"""Reward methods as plug-ins on the judge engine: the interface (:mod:`.base`), the common settings
(:mod:`.config`), each method's own (:mod:`.options`), the registry and its factory (:mod:`.registry`), driving a
method over one group (:mod:`.run`), scoring an instance file with any method (:mod:`.score_file`), and the methods
themselves, one package each (:mod:`.rubric`). Checks of a response's form that any method may apply are in
:mod:`.format_checks`.

Importing this package loads no method and no model library.
"""

from genrm.methods.base import GroupResult, MethodInputError, RewardMethod, UnknownReward
from genrm.methods.config import MethodConfig
from genrm.methods.options import MethodOptions
from genrm.methods.registry import DEFAULT_METHOD, make_method, method_names
from genrm.methods.run import check_judge, method_judge, score_instance

__all__ = [
    "DEFAULT_METHOD",
    "GroupResult",
    "MethodConfig",
    "MethodInputError",
    "MethodOptions",
    "RewardMethod",
    "UnknownReward",
    "check_judge",
    "make_method",
    "method_judge",
    "method_names",
    "score_instance",
]
