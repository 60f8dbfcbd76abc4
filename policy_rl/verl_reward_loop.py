"""verl's reward loop (``reward_model.use_reward_loop``, on by default in verl 0.7) with whole groups.

Under the reward loop each response is scored alone, in a ``RewardLoopWorker`` Ray actor, as soon as its generation
ends: the rows of one prompt arrive one by one, in several workers (every rollout worker has its own) on several
nodes. :class:`GroupedRewardManager`, a reward manager of that loop (``reward_model.reward_loop_source=importlib``),
sends each row to a :class:`GroupGatherer`, a named Ray actor shared by every worker of the run, which holds the rows
of each group (verl's ``uid``) until the group is whole (the rollout's ``n`` rows, ``val_kwargs.n`` in validation),
then scores them together with the configured batch reward function (``compute_score_batch``), so the rubric's remap
and every reward that depends on the group are the ones ``genrm score`` gives. Each row gets its own result back.

- A group that is not whole ``group_wait_s`` after its first row arrived is scored with the rows that came and says
  so: ``group_partial`` is 1 and ``group_rows`` the rows scored, in verl's reward extra info (as the reward server
  says it of OpenRLHF's gathered queries). A row of a group already scored starts a new group.
- A method whose rewards do not depend on the group (:func:`policy_rl.verl_reward.needs_group`) is scored row by
  row, at once, in the worker.
- Several gatherers (``group_gatherers``) share the groups by a hash of the ``uid``, so one actor is not the one
  place every row of a large run passes; a group is always whole in one of them, and each scored group is one
  request to the judge, so several reward servers need no affinity.
- A failed scoring is raised to every row of its group (verl stops with the reason), never made a reward.

Settings, read from ``custom_reward_function.reward_kwargs`` beside the reward function's own: ``group_wait_s``
(default 300 s) and ``group_gatherers`` (default 1). Which rows are validation rows is read from
``extra_info.split`` (``train``, or anything else for validation: verl's example data and
:func:`policy_rl.verl_reward.verl_row` write it); it is needed only when ``n`` and ``val_kwargs.n`` differ.
"""

from __future__ import annotations

import asyncio
import inspect
import zlib
from typing import Any

import ray
from verl import DataProto
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from policy_rl.verl_reward import refuse_reward_loop_settings

#: The Ray actor name of gatherer ``k`` of a run (one namespace per verl job).
GATHERER_NAME = "genrm_group_gatherer_{}"
#: verl's ``reward_model.reward_loop_class_name`` for this manager.
MANAGER = "GroupedRewardManager"
# An async Ray actor takes this many calls at once (Ray's default for async actors); every row waiting for its group
# holds one, so a worker's share of a batch must fit.
_ACTOR_CALLS = 1000
# Every row of every worker waits in a gatherer's call: far more than any batch's rows.
_GATHERER_CALLS = 2**20


class GroupSizeUnknown(ValueError):
    """A row whose group size cannot be known (training and validation sizes differ and it names no split)."""


class Figures(dict):
    """A row's reward extra info. verl takes the first row's keys as the batch's columns and reads every other row's
    by key: a figure a row does not have (a judgement that failed logs none) reads NaN, as the batch form fills it."""

    def __missing__(self, key: str) -> float:
        return float("nan")


class _Group:
    # not a dataclass: loaded by file path, the module is not in sys.modules, where dataclasses look their module up
    def __init__(self, size: int, done: asyncio.Future) -> None:
        self.size, self.done = size, done
        self.rows: list[dict[str, Any]] = []
        self.timer: asyncio.TimerHandle | None = None
        self.closed = False


@ray.remote(num_cpus=0)
class GroupGatherer:
    """Holds the rows of each group until it is whole (or ``wait_s`` seconds after its first row) and scores them
    together with ``reward_fn`` (a verl batch reward function, its reward kwargs bound)."""

    def __init__(self, reward_fn: Any, wait_s: float) -> None:
        self.reward_fn, self.wait_s = reward_fn, wait_s
        self.open: dict[str, _Group] = {}
        self.scoring: set[asyncio.Task] = set()  # the loop holds tasks weakly: a group's scoring must not be lost

    async def score(self, uid: str, size: int, row: dict[str, Any]) -> dict[str, Any]:
        """The result of ``row`` (``data_source``, ``solution_str``, ``ground_truth``, ``extra_info``) scored with
        the rest of group ``uid`` of ``size`` rows; raises what the scoring raised."""
        loop = asyncio.get_running_loop()
        group = self.open.get(uid)
        if group is None:
            group = self.open[uid] = _Group(size, loop.create_future())
            group.timer = loop.call_later(self.wait_s, self._close, uid, group)
        place = len(group.rows)
        group.rows.append(row)
        if len(group.rows) >= group.size:
            self._close(uid, group)
        return (await asyncio.shield(group.done))[place]

    def _close(self, uid: str, group: _Group) -> None:
        if group.closed:
            return
        group.closed = True
        if self.open.get(uid) is group:
            del self.open[uid]
        if group.timer is not None:
            group.timer.cancel()
        task = asyncio.ensure_future(self._score(group))
        self.scoring.add(task)
        task.add_done_callback(self.scoring.discard)

    async def _score(self, group: _Group) -> None:
        rows = group.rows
        try:
            results = await asyncio.to_thread(
                self.reward_fn,
                data_sources=[r["data_source"] for r in rows],
                solution_strs=[r["solution_str"] for r in rows],
                ground_truths=[r["ground_truth"] for r in rows],
                extra_infos=[r["extra_info"] for r in rows],
            )
        except Exception as exc:  # every row of the group is told; none is given a reward
            group.done.set_exception(exc)
            return
        gathered = {"group_rows": float(len(rows)), "group_partial": float(len(rows) < group.size)}
        group.done.set_result([{**result, **gathered} for result in results])


class GroupedRewardManager(RewardManagerBase):
    """A reward manager of verl's reward loop that scores whole groups (see the module docstring); verl makes one
    per ``RewardLoopWorker`` with its own arguments."""

    def __init__(self, config, tokenizer, compute_score=None, reward_router_address=None, reward_model_tokenizer=None):
        super().__init__(config, tokenizer)
        if compute_score is None:
            raise ValueError(f"reward_model.reward_loop_class_name={MANAGER} scores with a batch reward function: "
                             "set custom_reward_function.path and .name=compute_score_batch")  # fmt: skip
        raw = getattr(compute_score, "args", (compute_score,))[0]
        if "solution_strs" not in inspect.signature(raw).parameters:
            raise ValueError(f"reward_model.reward_loop_class_name={MANAGER} scores whole groups with a batch reward "
                             f"function: set custom_reward_function.name=compute_score_batch, not "
                             f"{getattr(raw, '__name__', raw)!s:.60}")  # fmt: skip
        rollout = config.actor_rollout_ref.rollout
        self.sizes = {"train": int(rollout.n), "validation": int(rollout.val_kwargs.n)}
        kwargs = dict(config.custom_reward_function.get("reward_kwargs", {}) or {})
        self.grouped = refuse_reward_loop_settings(kwargs)
        self.compute_score = compute_score
        self.wait_s = float(kwargs.get("group_wait_s", 300.0))
        gatherers = int(kwargs.get("group_gatherers", 1))
        if not self.wait_s > 0 or gatherers < 1:
            raise ValueError("custom_reward_function.reward_kwargs.group_wait_s must be > 0 and group_gatherers >= 1")
        self._refuse_crowded_workers(config)
        options = {"get_if_exists": True, "scheduling_strategy": "SPREAD", "max_concurrency": _GATHERER_CALLS}
        gatherer = GroupGatherer.options
        self.gatherers = [gatherer(name=GATHERER_NAME.format(k), **options).remote(compute_score, self.wait_s)
                          for k in range(gatherers)] if self.grouped else []  # fmt: skip

    def _refuse_crowded_workers(self, config) -> None:
        # Every row waiting for its group holds one of its worker's calls. When a batch's rows are all generated, the
        # rows queued behind a full worker hold back at most one group each; the groups whose rows all got in are
        # whole and free their calls. Rows stay stuck (until group_wait_s makes their groups partial) only when the
        # queued rows' groups can fill every call: queued x (n - 1) >= calls. One group more for the group a chunk
        # boundary splits between two workers.
        n = self.sizes["train"]
        if not self.grouped or n < 2:
            return
        workers = int(config.actor_rollout_ref.rollout.agent.get("num_workers", 1) or 1)
        rows = int(config.data.get("train_batch_size", 0) or 0) * n
        most = _ACTOR_CALLS + _ACTOR_CALLS // (n - 1) - n
        if rows / workers > most:
            raise ValueError(f"data.train_batch_size x n = {rows} rows over {workers} rollout workers is more than "
                             f"the {most} rows per worker whose groups can fill while each waits in one of the "
                             f"worker's {_ACTOR_CALLS} calls: raise "
                             "actor_rollout_ref.rollout.agent.num_workers")  # fmt: skip

    def group_size(self, extra_info: dict[str, Any]) -> int:
        """The rows of the group a row with ``extra_info`` belongs to (the rollout's ``n``, or ``val_kwargs.n`` for a
        row whose ``split`` is not ``train``); raises :class:`GroupSizeUnknown` when that cannot be known."""
        if self.sizes["train"] == self.sizes["validation"]:
            return self.sizes["train"]
        split = extra_info.get("split") if isinstance(extra_info, dict) else None
        if split is None:
            raise GroupSizeUnknown(
                f"actor_rollout_ref.rollout.n ({self.sizes['train']}) and val_kwargs.n ({self.sizes['validation']}) "
                "differ, and a row's extra_info names no split: write extra_info.split (train, test) in the parquet "
                "files (policy_rl.verl_reward.verl_row does), or set both to one value"
            )
        return self.sizes["train" if split == "train" else "validation"]

    async def run_single(self, data: DataProto) -> dict:
        """verl's reward loop contract: one row in, ``{"reward_score", "reward_extra_info"}`` out."""
        assert len(data) == 1, "the reward loop hands one row at a time"
        item = data[0]
        responses = item.batch["responses"]
        length = int(item.batch["attention_mask"][-responses.shape[-1] :].sum())
        text = await self.loop.run_in_executor(
            None, lambda: self.tokenizer.decode(responses[:length], skip_special_tokens=True)
        )
        extra_info = dict(item.non_tensor_batch.get("extra_info", None) or {})
        uid = item.non_tensor_batch.get("uid", None)
        truth = item.non_tensor_batch["reward_model"]["ground_truth"]
        row = {"data_source": item.non_tensor_batch["data_source"], "solution_str": text, "ground_truth": truth,
               "extra_info": extra_info}  # fmt: skip
        if not self.grouped:
            batch = {"data_sources": [row["data_source"]], "solution_strs": [text],
                     "ground_truths": [row["ground_truth"]], "extra_infos": [extra_info]}  # fmt: skip
            result = await self.loop.run_in_executor(None, lambda: self.compute_score(**batch)[0])
        else:
            if uid is None:
                raise ValueError("a row reached the reward loop without verl's uid: its group cannot be found")
            # verl passes the uid beside extra_info; the batch form finds a group's rows by extra_info.uid
            row["extra_info"] = {**extra_info, "uid": str(uid)}
            shard = zlib.crc32(str(uid).encode()) % len(self.gatherers)
            result = await self.gatherers[shard].score.remote(str(uid), self.group_size(extra_info), row)
        return {"reward_score": result["score"], "reward_extra_info": Figures(result)}


if __name__ != "policy_rl.verl_reward_loop":
    # Loaded by file path (reward_model.reward_loop_module_path), this module is not importable under its name: Ray
    # would ship the gatherer's class by value. The package's own classes are shipped by reference.
    from policy_rl.verl_reward_loop import Figures, GroupedRewardManager, GroupGatherer  # noqa: F401, F811
