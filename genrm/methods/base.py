"""What every reward method is: the interface the server, ``genrm score``, RL and evaluation drive.

A reward method owns its instance model (one group: the responses to one prompt, with what the method needs to judge
them), the requests it sends to the judge engine (prompts, JSON schema), how it reads the replies, and how it turns
a group's readings into rewards and records. It is driven in three steps (:mod:`genrm.methods.run`):

1. :meth:`RewardMethod.prepare`: check one instance and plan its judging, in the caller's thread; an instance that
   cannot be scored raises :class:`MethodInputError` naming the field (nothing of it is judged);
2. :meth:`RewardMethod.judge`: ask the judge (async; an engine, or the method's fixed-rule reader when the judge has
   no model) and read one reading per response;
3. :meth:`RewardMethod.score`: compute the rewards and records from the readings (CPU: verifiers, remapping), in a
   worker thread when the caller is a server.

Nothing here knows a method by name: methods are found through :mod:`genrm.methods.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from genrm.engine.judge import Judge
from genrm.engine.types import ChatRequest
from genrm.methods.options import MethodOptions
from verifiers.result import STATUS_MEANINGS as VERIFIER_STATUS_MEANINGS

#: The most responses one group may hold.
MAX_RESPONSES = 1024
#: The field of an instance that holds its image (a path, URL or data URI), in every method whose instances have one.
IMAGE_FIELD = "image"


class MethodInputError(ValueError):
    """An instance a method cannot score.

    Attributes:
        loc: where the problem is inside the instance, as a path of keys and indices (``("rubric", "essential", 0,
            "reference")``); empty for the instance as a whole.
        kind: what is at fault, in a word (``rubric``, ``instance``, ...): the error's type in an HTTP answer, and
            the start of its line in ``genrm score`` (``invalid rubric: ...``).
    """

    def __init__(self, message: str, loc: Sequence[str | int] = (), kind: str = "instance") -> None:
        super().__init__(message)
        self.loc: tuple[str | int, ...] = tuple(loc)
        self.kind = kind


class GroupInstance(Protocol):
    """What every method's instance model (a pydantic model) has: an id, and the G responses to one prompt that are
    scored together (a list of at most :data:`MAX_RESPONSES`)."""

    id: str
    responses: list[str]

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any: ...

    def model_dump_json(self, **kwargs: Any) -> str: ...


class GroupResult(BaseModel):
    """One scored group (one output line of ``genrm score``): the reward of each response, a record per response
    that says how it came about, or the error that stopped the whole group.

    A method's result model derives from this one and types its ``records``.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None
    rewards: list[float | None] | None = Field(
        description="one reward per response, in [0, 1]; null for a response whose reward is unknown; null for all "
        "when the group failed"
    )
    records: list[Any] = Field(default_factory=list)
    error: str | None = None
    line: int | None = Field(default=None, description="1-based input line number, when read from a file")
    replaced_text: list[int] | None = Field(
        default=None,
        description="the responses (by index) that held characters UTF-8 cannot carry (lone surrogates), each "
        "replaced by U+FFFD before judging; null when none did",
    )


@dataclass(frozen=True)
class UnknownReward:
    """Why one response has no reward, for a caller that must answer with a number or refuse (OpenRLHF).

    Attributes:
        message: what went wrong, for the client.
        retry: True when it is the judge's or the server's failure (retrying may help: HTTP 503); False when the
            input is at fault (HTTP 422).
        loc: the field at fault, inside the instance (empty when none).
        kind: a short machine-readable class (``judge_failure``, ``busy``, ``unscored``, ...).
    """

    message: str
    retry: bool
    loc: tuple[str | int, ...] = ()
    kind: str = "unknown"


def judge_failed(failure: str | None, reason: str | None, what: str = "this response") -> UnknownReward:
    """The unknown reward of a response whose judgement failed (``failure``: its class, ``reason``: why), which a
    retry may mend; ``what`` names what was judged (``this caption``, ``a comparison``)."""
    return UnknownReward(f"the judge failed on {what} ({failure}: {reason}); retry", True, kind="judge_failure")


#: The status of a criterion (or a quote) whose value the judge did not find in the response: it was invented, and is
#: scored as nothing stated (``genrm.methods.rubric.execution``).
UNGROUNDED = "ungrounded"

#: What each status a method's records and summaries name means, in a few words: the verifiers' statuses, and the
#: failures of a judge's answer that the methods share (``genrm.methods.rubric.judge_output`` details the rubric's).
STATUS_MEANINGS: dict[str, str] = {
    **VERIFIER_STATUS_MEANINGS,
    UNGROUNDED: "the judge gave a value (or quote) the response does not state; scored as nothing stated",
    "unscored": "this judge does not score the criterion (the rule judge and fuzzy criteria); no score",
    "not_json": "the judge's answer holds no JSON object; no score",
    "schema": "the judge's answer is JSON of the wrong shape; no score",
    "unreadable": "the judge's answer cannot be read; no score",
    "criterion_mismatch": "the judge's answer lists other criteria than the rubric's; no score",
    "wrong_path": "the judge gave a credit where a call was asked for, or the reverse; no score",
    "wrong_verifier": "the judge called another verifier than the criterion's; no score",
    "backend_error": "the judge model was not reached or gave no answer after retries; no score",
    "tie": "the judge scored both responses alike where it must choose; no score",
}


@dataclass(frozen=True)
class ResultTally:
    """What a server counts of one scored group: the judge failures and verifier statuses it met."""

    judge_failures: list[str] = field(default_factory=list)
    verifier_statuses: list[str] = field(default_factory=list)


#: A method's instance model: one group, as the method reads it from a request or a line.
InstanceT = TypeVar("InstanceT", bound=BaseModel)
#: What :meth:`RewardMethod.prepare` makes of an instance: the instance with its judging planned.
PreparedT = TypeVar("PreparedT")
#: What :meth:`RewardMethod.judge` reads from the judge for one response.
ReadingT = TypeVar("ReadingT")
#: A method's result model: one scored group.
ResultT = TypeVar("ResultT", bound=GroupResult)
#: A method's ``/judge`` payload model.
PayloadT = TypeVar("PayloadT", bound=BaseModel)


@runtime_checkable
class RewardMethod(Protocol[InstanceT, PreparedT, ReadingT, ResultT]):
    """A reward method, configured (see the module docstring for how it is driven), generic over its instance, its
    prepared instance, its reading of one response and its result; a caller that drives any method writes
    ``RewardMethod`` alone.

    Attributes:
        name: the name it is registered under.
        options_model: the model of its own settings (:class:`genrm.methods.options.MethodOptions`), which the
            registry validates them with.
        instance_model: the pydantic model of one group (it has ``id: str`` and ``responses: list[str]``).
        result_model: the pydantic model of one scored group (a :class:`GroupResult`).
        reads_without_engine: whether it can judge with no model (``rule``).
    """

    name: str
    instance_model: type[InstanceT]
    result_model: type[ResultT]
    reads_without_engine: bool

    @property
    def options_model(self) -> type[MethodOptions]:
        """The model of its own settings (a class attribute in practice; read-only here, so that a method's own
        subclass of :class:`genrm.methods.options.MethodOptions` is one)."""
        ...

    def prepare(self, instance: InstanceT) -> PreparedT:
        """Check ``instance`` and plan its judging (the result keeps it as ``instance``); raises
        :class:`MethodInputError` naming the field at fault."""
        ...

    async def judge(self, prepared: PreparedT, judge: Judge) -> list[ReadingT]:
        """One reading per response, in order; never raises on a response's text (raises
        ``genrm.engine.BackendUnavailable`` when the model cannot be reached at all)."""
        ...

    def uses_workers(self, prepared: PreparedT) -> bool:
        """Whether :meth:`score` may wait for expression workers (a server gives such calls threads of their own)."""
        ...

    def score(self, prepared: PreparedT, readings: Sequence[ReadingT]) -> ResultT:
        """The group's result from its readings (one per response, in order); never raises on a response's text."""
        ...

    def unknown_reward(self, result: ResultT, index: int) -> UnknownReward:
        """Why response ``index`` of ``result`` has no reward."""
        ...

    def extra_logs(self, result: ResultT, index: int) -> dict[str, float]:
        """Per-response figures worth logging next to the reward (OpenRLHF's ``extra_logs``), e.g. its masks."""
        ...

    def tally(self, result: ResultT) -> ResultTally:
        """The judge failures and verifier statuses met in ``result``, for the server's metrics."""
        ...


@runtime_checkable
class ExplainsRewards(Protocol[ResultT]):
    """A method that says in one line how a known reward came about (``genrm records`` shows it; a method without
    it is shown by its :meth:`RewardMethod.extra_logs` figures)."""

    def explain(self, result: ResultT, index: int) -> str:
        """How response ``index`` of ``result`` got its reward: the rules and the criteria that lowered it."""
        ...


@runtime_checkable
class HasScriptedJudge(Protocol):
    """A method that ships a scripted judge (no model): rules over the scenes its example images carry, so that a
    user can try the method offline with ``--judge scripted`` (:func:`genrm.methods.method_judge`)."""

    def scripted_judge(self, image_dir: Path | None) -> Callable[[ChatRequest], str]:
        """The script of a :class:`genrm.engine.scripted.ScriptedEngine` answering this method's requests; relative
        image paths are read against ``image_dir``. The script raises ValueError for a request it cannot answer (an
        image whose scene it does not know)."""
        ...


@runtime_checkable
class AnswersJudgePayloads(Protocol[PayloadT, ResultT]):
    """A method that also answers the one-response ``/judge`` payloads of verifier-registry reward servers (the
    protocol of ClaimDiff-RL's reward server and its verl remote reward manager). A server mounts that route only for
    such a method.

    Attributes:
        payload_model: the pydantic model of one payload (the route's body).
    """

    payload_model: type[PayloadT]

    def instance_from_payload(self, payload: PayloadT) -> BaseModel:
        """The one-response group a payload asks about; raises :class:`MethodInputError` naming the field at fault."""
        ...

    def payload_reply(self, payload: PayloadT, result: ResultT, failure_reward: float | None) -> dict[str, Any]:
        """The protocol's answer for ``result`` (the group of :meth:`instance_from_payload`): its rewards, with null
        for an unknown one unless ``failure_reward`` is given."""
        ...


#: The column of an RLVR record that carries the teacher's label to the method's reward functions.
LABEL_COLUMN = "judge_label"

#: The column of a judge-training record that lists its images (TRL's vision datasets use this name).
IMAGES_COLUMN = "images"


def judge_labels(columns: Mapping[str, Any], reward: str, completions: int) -> list[Any]:
    """The ``judge_label`` column TRL hands the reward function ``reward`` among its keyword arguments, one value per
    completion; raises ValueError naming the function when it is missing or of another length."""
    labels = columns.get(LABEL_COLUMN)
    if labels is None or len(labels) != completions:
        raise ValueError(f"{reward} needs the {LABEL_COLUMN!r} column, one value per completion")
    return list(labels)


@dataclass(frozen=True)
class JudgeTraining:
    """How a method's judge is trained (``genrm train sft|rlvr``) and labelled (``genrm data labels``).

    Attributes:
        example_model: the pydantic model of one labelled example (it has ``id``, ``input_id`` and
            ``loses_credit``, the balancing key).
        sft_record: ``(example, exposure) -> record`` for TRL's ``SFTTrainer`` (``prompt``, ``completion``).
        rlvr_record: ``(example, exposure) -> record`` for TRL's ``GRPOTrainer`` (``prompt``, ``judge_label``).
        reward_funcs: TRL reward functions of RLVR, reading the ``judge_label`` column.
        images: whether every record shows the judge its image (an ``images`` column), whatever the exposure.
        label: ``async (instances, teachers, min_teachers, concurrency, progress) -> (examples, report)``: labels
            from teacher engines; the report has ``markdown()`` and ``counts()``.
        input_model: the model of what ``label`` reads (one line of ``genrm data labels``' input); None for the
            method's instance model.
        read_input: ``(path) -> inputs``, for a method whose labelling input is not only a JSONL of ``input_model``
            (the pairwise method also reads MMRB2's ``.json``); raises ValueError naming the file and the line or
            item refused. None: a JSONL of ``input_model``.
        corpus: ``() -> texts``: what the method's judge reads and writes (system prompts, judge prompts, answers),
            to train the tokenizer of a tiny judge built here (``genrm tiny-model``, a recipe's
            ``build_tiny_model``); None: the default method's.
    """

    example_model: type[BaseModel]
    sft_record: Callable[[Any, str], dict[str, Any]]
    rlvr_record: Callable[[Any, str], dict[str, Any]]
    reward_funcs: tuple[Callable[..., list[float]], ...]
    images: bool
    label: Callable[..., Any]
    input_model: type[BaseModel] | None = None
    read_input: Callable[[str], list[Any]] | None = None
    corpus: Callable[[], Iterable[str]] | None = None


@dataclass(frozen=True)
class ResponseAuditPlan:
    """What the response audit (:mod:`genrm.evaluation.response_audit`) compares for a method whose instances hold a
    ``reference`` and regular ``responses``: the abnormal response categories that test it (names of
    ``genrm.evaluation.response_audit.CONSTRUCTORS``), its settings (name -> the method's options: its safeguards
    on and off) and ``wrong``, the category whose response the master keys are put before and after.
    """

    categories: tuple[str, ...]
    settings: dict[str, dict[str, Any]] = field(default_factory=lambda: {"default": {}})
    wrong: tuple[str, ...] = ("hallucinated_object", "missing_salient_fact")


@dataclass(frozen=True)
class SetAudit:
    """How a method's judge is audited on a labelled audit set (``genrm audit run`` on a set of ``genrm audit
    build``): every response judged under each setting, with false positive rates per category and attack.

    Attributes:
        settings: the settings a run can take, in report order (all of them by default).
        read: ``(path, master_keys) -> examples``: the set at ``path``, its master keys left out unless
            ``master_keys``; ValueError naming the line refused.
        run: ``(judge, examples, settings, *, margin, argument_threshold, worst, progress, answer_format,
            concurrency, grounding) -> report``: the examples judged by ``judge`` (a
            :class:`genrm.engine.judge.Judge`) under ``settings`` (None: all); ``margin`` is the credit above the
            deserved one that counts as a false positive (0-1), ``argument_threshold`` the verifier score counted
            right (0-1), ``worst`` the false positives listed per setting. The report has ``markdown(worst=N)``,
            ``to_json()`` and ``skipped`` (setting -> why it was not run); raises ``BackendUnavailable`` when the
            judge cannot be reached.
        plot: ``(report, path) -> path``: a PNG chart of the report; ImportError without matplotlib.
    """

    settings: tuple[str, ...]
    read: Callable[[str, bool], list[Any]]
    run: Callable[..., Any]
    plot: Callable[[Any, Path], Path]


@runtime_checkable
class AuditsWithSets(Protocol):
    """A method whose judge is audited on labelled audit sets rather than on its instances' responses."""

    def set_audit(self) -> SetAudit:
        """How this method's judge is audited on a set."""
        ...


@runtime_checkable
class TrainsItsJudge(Protocol):
    """A method whose judge can be trained on labelled examples."""

    def judge_training(self) -> JudgeTraining:
        """How this method's judge is trained and labelled."""
        ...


@runtime_checkable
class NamesAnswerTexts(Protocol[InstanceT]):
    """A method that can name the texts a right answer to an instance needs (its targets, a reference): the words a
    policy built here (the tiny policy of ``genrm rl``) must have in its vocabulary, or no sample could earn the
    reward. Without it, the instance's string fields are taken."""

    def answer_texts(self, instance: InstanceT) -> list[str]:
        """The texts a right answer to ``instance`` (of the method's instance model) needs."""
        ...


@runtime_checkable
class CountsPolicyTokens(Protocol):
    """A method whose rewards depend on lengths in tokens (the balcap method's length rule): a trainer hands it the
    policy's tokenizer so that it counts as the policy does."""

    def count_tokens_with(self, tokenizer: Any) -> None:
        """Count tokens with ``tokenizer`` from now on (unless the method's options name another)."""
        ...


def failed_result(method: RewardMethod, ident: str | None, error: str, line: int | None = None) -> GroupResult:
    """``method``'s result for a group that could not be scored at all: no rewards, and the error."""
    return method.result_model(id=ident, rewards=None, error=error, line=line)
