"""Every method is a ``RewardMethod`` of its own instance, prepared, reading and result types, as a type checker
(mypy) reads them: the interface is generic, so a method whose types drift from the protocol is caught."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")
ROOT = Path(__file__).resolve().parents[1]

DECLARED = """
from genrm.methods.balcap import method as balcap
from genrm.methods.balcap.models import BalCapInstance, BalCapResult
from genrm.methods.base import RewardMethod
from genrm.methods.baselines.holistic import HolisticMethod
from genrm.methods.baselines.models import BaselineResult, PreparedCaptions
from genrm.methods.baselines.rouge_l import RougeLMethod
from genrm.methods.captions import CaptionInstance
from genrm.methods.claimdiff import method as claimdiff
from genrm.methods.claimdiff.models import ClaimDiffInstance, ClaimDiffResult
from genrm.methods.pairwise.method import PairwiseInstance, PairwiseMethod, PairwiseResult, PreparedPairs
from genrm.methods.pairwise.reading import PairJudgement
from genrm.methods.rubicap import method as rubicap
from genrm.methods.rubicap.models import RubiCapInstance, RubiCapResult
from genrm.methods.rubicap.reading import Reading as LikertReading
from genrm.methods.rubric.judge_output import ParsedJudgement
from genrm.methods.rubric.method import PreparedInstance, RubricMethod
from genrm.methods.rubric.models import Instance
from genrm.methods.rubric.scoring import InstanceResult


def typed(
    rubric: RubricMethod, claim: claimdiff.ClaimDiffMethod, bal: balcap.BalCapMethod, rubi: rubicap.RubiCapMethod,
    pair: PairwiseMethod, holistic: HolisticMethod, rouge: RougeLMethod,
) -> list[RewardMethod]:
    a: RewardMethod[Instance, PreparedInstance, ParsedJudgement, InstanceResult] = rubric
    b: RewardMethod[ClaimDiffInstance, claimdiff.PreparedCaptions, claimdiff.Reading, ClaimDiffResult] = claim
    c: RewardMethod[BalCapInstance, balcap.PreparedCaptions, balcap.Reading, BalCapResult] = bal
    d: RewardMethod[RubiCapInstance, rubicap.PreparedCaptions, rubicap.CaptionReading, RubiCapResult] = rubi
    e: RewardMethod[PairwiseInstance, PreparedPairs, tuple[PairJudgement, ...], PairwiseResult] = pair
    f: RewardMethod[CaptionInstance, PreparedCaptions, LikertReading, BaselineResult] = holistic
    g: RewardMethod[CaptionInstance, PreparedCaptions, float, BaselineResult] = rouge
    return [a, b, c, d, e, f, g]
"""

WRONG = """
from genrm.methods.base import RewardMethod
from genrm.methods.rubric.method import PreparedInstance, RubricMethod
from genrm.methods.rubric.models import Instance
from genrm.methods.rubric.scoring import InstanceResult


def typed(rubric: RubricMethod) -> RewardMethod:
    wrong: RewardMethod[Instance, PreparedInstance, str, InstanceResult] = rubric
    return wrong
"""


def _mypy(source: str, tmp_path: Path) -> tuple[str, int]:
    # in a process of its own: mypy raises the interpreter's recursion limit, which other tests rely on
    module = tmp_path / "declared.py"
    module.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mypy", str(module), "--ignore-missing-imports",
                           "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
    return done.stdout + done.stderr, done.returncode


def test_the_declarations_name_every_built_in_method():
    from genrm.methods.registry import BUILTIN

    # a built-in method added to the registry must be declared above with its types
    declared = {target.rsplit(":", 1)[1] for target in BUILTIN.values()}
    assert declared == {name for name in declared if f"{name}," in DECLARED or f"{name})" in DECLARED}
    assert len(declared) == DECLARED.count(": RewardMethod[")


@pytest.mark.slow
def test_every_method_is_a_reward_method_of_its_own_types_and_another_reading_type_is_refused(tmp_path):
    out, status = _mypy(DECLARED + WRONG.replace("def typed(", "def wrong("), tmp_path)
    errors = [line for line in out.splitlines() if ": error:" in line]
    # the one refusal is the wrong reading type: the seven methods are declared with theirs
    assert len(errors) == 1 and "RewardMethod[Instance, PreparedInstance, str, InstanceResult]" in errors[0], out
    assert status == 1
