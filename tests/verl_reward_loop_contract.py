"""verl's own reward loop on a local Ray cluster, with the docs' recipe over verl's default config; prints JSON.

    $GENRM_VERL_PYTHON tests/verl_reward_loop_contract.py INSTANCES_JSONL WORK_DIR JUDGE

A tiny tokenizer built from the instances is saved in ``WORK_DIR`` (the policy's tokenizer, which each worker loads
from ``actor_rollout_ref.model.path``). verl's config is composed from its own files (``ppo_trainer``, every default
kept) with the overrides docs/policy-rl.md gives. The instances' responses become one verl batch (each prompt's rows
with one ``uid``, as ``rollout.n`` makes them), reordered by verl's ``RayPPOTrainer._balance_batch``; verl's
``RewardLoopManager`` splits it over 2 ``RewardLoopWorker`` actors, which score row by row. Run three ways on one
cluster:

- ``by_path``: both modules loaded by file path, the judge ``JUDGE`` (a reward server);
- ``by_package``: both loaded by ``pkg://``, the judge in process (``rule``), two rows of the first group left out
  (that group is partial) and a short ``group_wait_s``;
- ``legacy``: ``use_reward_loop=False``, the ``batch`` manager loaded by path, in verl's ``compute_reward_async`` Ray
  task, as ``launch_reward_fn_async`` runs it.

Ray listens on loopback only (its sockets are checked); it runs with ``RAY_AUTH_MODE=disabled``.
"""

import json
import os
import re
import sys
import uuid
from pathlib import Path

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import numpy as np  # noqa: E402
import psutil  # noqa: E402
import ray  # noqa: E402
import verl  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from verl.experimental.reward_loop import RewardLoopManager  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer  # noqa: E402
from verl.trainer.ppo.reward import compute_reward_async, get_custom_reward_fn, load_reward_manager  # noqa: E402

from genrm.methods.rubric.models import Instance  # noqa: E402
from genrm.training.tiny_model import build_tokenizer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verl_contract import _batch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def recipe(judge: str, by_path: bool, n: int, wait_s: float) -> list[str]:
    """The overrides of docs/policy-rl.md's reward loop command, with this run's judge, ``n`` and loading (the
    test's own settings after them)."""
    text = (ROOT / "docs" / "policy-rl.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```bash\n(.*?)```", text, re.S) if "GroupedRewardManager" in b]
    overrides = [word for word in block.replace("\\\n", " ").split() if "=" in word]
    assert any(o.startswith("reward_model.reward_loop_class_name=") for o in overrides), overrides
    paths = {"custom_reward_function.path": ROOT / "policy_rl" / "verl_reward.py",
             "reward_model.reward_loop_module_path": ROOT / "policy_rl" / "verl_reward_loop.py"}  # fmt: skip
    mine = {"actor_rollout_ref.rollout.n": n, "+custom_reward_function.reward_kwargs.judge": judge,
            **({key: str(path) for key, path in paths.items()} if by_path else {})}  # fmt: skip
    out = []
    for override in overrides:
        key = override.split("=", 1)[0]
        out.append(f"{key}={mine[key]}" if key in mine else override)
    assert {o.split("=", 1)[0] for o in out} >= set(mine), out
    return [*out, "reward_model.num_workers=2", f"+custom_reward_function.reward_kwargs.group_wait_s={wait_s}"]


def config(tokenizer_dir: str, overrides: list[str]):
    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        return compose("ppo_trainer", overrides=[f"actor_rollout_ref.model.path={tokenizer_dir}", *overrides])


def batch(instances: list[Instance], tokenizer, leave_out: tuple[int, ...] = ()):
    data = _batch(instances, tokenizer)
    uids = [str(uuid.uuid4()) for _ in instances]
    data.non_tensor_batch["uid"] = np.array([uids[n] for n, i in enumerate(instances) for _ in i.responses],
                                            dtype=object)  # fmt: skip
    # verl_row's extra_info: the split tells a training row's group size (rollout.n) from a validation row's
    data.non_tensor_batch["extra_info"] = np.array([{**info, "split": "train"} for info in
                                                    data.non_tensor_batch["extra_info"]], dtype=object)  # fmt: skip
    trainer = type("Trainer", (), {"_get_dp_size": lambda self, worker_group, role: 2, "actor_rollout_wg": None,
                                   "config": None})()  # fmt: skip
    RayPPOTrainer._balance_batch(trainer, data, metrics={})  # verl's own reordering, as fit() runs it
    if leave_out:
        data = data.select_idxs(
            [place for place, row in enumerate(data.non_tensor_batch["row"]) if row not in leave_out]
        )
    return data


def stop(manager) -> None:
    """Stop a manager's workers and the run's gatherer (the next run starts its own)."""
    from policy_rl.verl_reward_loop import GATHERER_NAME

    try:
        ray.kill(ray.get_actor(GATHERER_NAME.format(0)))
    except ValueError:  # a method scored row by row starts none
        pass
    for worker in manager.reward_loop_workers:
        ray.kill(worker)


def reward_loop(cfg, data) -> dict:
    manager = RewardLoopManager(cfg)
    out = manager.compute_rm_score(data)
    stop(manager)
    extra = {key: [float(v) for v in out.non_tensor_batch[key]] for key in out.meta_info["reward_extra_keys"]}
    return {"rows": [int(r) for r in data.non_tensor_batch["row"]],
            "scores": out.batch["rm_scores"].sum(dim=1).tolist(), "extra": extra}  # fmt: skip


def refusals(tokenizer_dir: str, tokenizer, truth: str) -> list[str]:
    """What a config that would score groups of one is told at its start: the grouped manager with a per-response
    function, the per-response function of a group method under verl's default manager, and the grouped manager
    given more rows per worker (2048 x 8 over verl's 8 rollout workers) than can wait for their groups."""
    from policy_rl.verl_reward_loop import GroupedRewardManager

    told = []
    per_row = config(tokenizer_dir, [*recipe("rule", False, 4, 60.0), "custom_reward_function.name=compute_score"])
    crowded = config(tokenizer_dir, [*recipe("rule", False, 8, 60.0), "data.train_batch_size=2048"])
    for attempt in (lambda: GroupedRewardManager(per_row, tokenizer, get_custom_reward_fn(per_row)),
                    lambda: get_custom_reward_fn(per_row)(data_source="genrm", solution_str="1", ground_truth=truth,
                                                          extra_info={}),
                    lambda: GroupedRewardManager(crowded, tokenizer, get_custom_reward_fn(crowded))):  # fmt: skip
        try:
            attempt()
            told.append("")
        except ValueError as exc:
            told.append(str(exc))
    return told


def listening() -> list[str]:
    """The addresses Ray's processes listen on (TCP)."""
    ours = {p.pid for p in psutil.Process().children(recursive=True)}
    return sorted({c.laddr.ip for c in psutil.net_connections("tcp") if c.status == "LISTEN" and c.pid in ours})


def main() -> None:
    source, work, judge = sys.argv[1:4]
    with open(source, encoding="utf-8") as handle:
        instances = [Instance.model_validate_json(line) for line in handle if line.strip()]
    n = len(instances[0].responses)
    texts = [text for instance in instances for text in [instance.prompt, *instance.responses]]
    tokenizer = build_tokenizer(texts, vocab_size=400)
    tokenizer_dir = str(Path(work) / "tokenizer")
    tokenizer.save_pretrained(tokenizer_dir)
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        result = {"listening": listening()}
        truth = batch(instances, tokenizer).non_tensor_batch["reward_model"][0]["ground_truth"]
        result["refused"] = refusals(tokenizer_dir, tokenizer, truth)
        result["by_path"] = reward_loop(
            config(tokenizer_dir, recipe(judge, True, n, 60.0)), batch(instances, tokenizer)
        )
        left_out = batch(instances, tokenizer, leave_out=(0, 1))
        result["by_package"] = reward_loop(config(tokenizer_dir, recipe("rule", False, n, 3.0)), left_out)
        legacy = config(tokenizer_dir, recipe(judge, True, n, 60.0)[:4] + ["reward_model.use_reward_loop=False",
                                                                         "reward_manager.name=batch"])  # fmt: skip
        data = batch(instances, tokenizer)
        reward_fn = load_reward_manager(legacy, tokenizer, num_examine=0)
        tensor, extra = ray.get(compute_reward_async.remote(data=data, reward_fn=reward_fn))
        result["legacy"] = {"rows": [int(r) for r in data.non_tensor_batch["row"]],
                            "scores": tensor.sum(dim=1).tolist(), "extra": sorted(extra)}  # fmt: skip
    finally:
        ray.shutdown()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
