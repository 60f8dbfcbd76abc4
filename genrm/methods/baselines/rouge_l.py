"""The ``rouge_l`` method: a caption's ROUGE-L against its reference caption as its reward, no judge at all; the
n-gram baseline a judged caption reward has to beat.

ROUGE-L is the COCO caption evaluation's (``pycocoevalcap``, extra ``captions``: the longest common subsequence's
F-measure with beta 1.2), on a plain tokenization (:func:`plain_tokens`: lowercased runs of letters and digits, which
``genrm captions eval`` also uses without Java): a reward is computed for every rollout, and the PTB tokenizer would
start Java for each batch. So the reward is close to, not always equal to, ``genrm captions eval``'s ROUGE-L (which
tokenizes with PTB when Java is there). In [0, 1]; an empty caption gets 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from genrm.engine import Judge
from genrm.methods.base import ResultTally, UnknownReward
from genrm.methods.baselines.models import BaselineRecord, BaselineResult, PreparedCaptions
from genrm.methods.captions import CaptionInstance, answer_text, check_caption_exposure
from genrm.methods.config import MethodConfig
from genrm.methods.options import NoOptions


def plain_tokens(text: str) -> str:
    """``text`` tokenized plainly (lowercased runs of letters and digits, space-separated): the PTB tokenizer's output
    less its finer splits, used by this reward and by the reference metrics without Java."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def rouge_l(caption: str, reference: str) -> float:
    """ROUGE-L (F-measure, beta 1.2) of ``caption`` against ``reference`` on plain tokens; 0 for an empty caption.
    Raises ImportError without pycocoevalcap."""
    from pycocoevalcap.rouge.rouge import Rouge

    candidate, ref = plain_tokens(caption), plain_tokens(reference)
    if not candidate or not ref:
        return 0.0
    return float(Rouge().calc_score([candidate], [ref]))


class RougeLMethod:
    """ROUGE-L as a caption reward (see the module docstring); registered as ``rouge_l``."""

    name = "rouge_l"
    options_model = NoOptions
    instance_model = CaptionInstance
    result_model = BaselineResult
    reads_without_engine = True  # nothing to ask: any judge spec (rule included) scores it

    def __init__(self, config: MethodConfig | None = None, options: NoOptions | None = None) -> None:
        check_caption_exposure(self.name, (config or MethodConfig()).exposure)
        try:
            import pycocoevalcap.rouge.rouge  # noqa: F401
        except ImportError:
            raise ValueError("the rouge_l method needs pycocoevalcap: pip install 'genrm[captions]'") from None

    def prepare(self, instance: CaptionInstance) -> PreparedCaptions:
        """The instance and its captions (``<answer>`` blocks cut out when present)."""
        return PreparedCaptions(instance, [answer_text(response) for response in instance.responses])

    async def judge(self, prepared: PreparedCaptions, judge: Judge) -> list[float]:
        """Each caption's ROUGE-L (the judge is not asked)."""
        instance, captions = prepared.instance, prepared.captions
        return [rouge_l(caption, instance.reference) for caption in captions]

    def uses_workers(self, prepared: Any) -> bool:
        """Never."""
        return False

    def score(self, prepared: PreparedCaptions, readings: Sequence[float]) -> BaselineResult:
        """The ROUGE-L of each caption is its reward."""
        records = [BaselineRecord(reward=value, score=value) for value in readings]
        return BaselineResult(id=prepared.instance.id, rewards=[r.reward for r in records], records=records)

    def unknown_reward(self, result: BaselineResult, index: int) -> UnknownReward:
        """Never unknown; here for the interface."""
        return UnknownReward("no reward", False)

    def extra_logs(self, result: BaselineResult, index: int) -> dict[str, float]:
        """Nothing beyond the reward."""
        return {}

    def tally(self, result: BaselineResult) -> ResultTally:
        """Nothing to count."""
        return ResultTally()
