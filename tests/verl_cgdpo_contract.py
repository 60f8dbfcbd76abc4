"""verl's own reordering, reward manager and advantage estimator around the balcap method's decoupled score (c-GDPO);
prints the outcome as JSON.

    $GENRM_VERL_PYTHON tests/verl_cgdpo_contract.py INSTANCES_JSONL JUDGE_SPEC METHOD_OPTIONS_JSON

The instances' responses become one verl batch, each prompt's rows together with one ``uid``, as ``rollout.n`` makes
them. verl's ``RayPPOTrainer._balance_batch`` reorders the rows; verl loads ``compute_score_batch`` from
``policy_rl/verl_reward.py`` by its path (``get_custom_reward_fn``, as ``custom_reward_function.path`` makes it do,
which registers the ``genrm_cgdpo`` estimator), with ``method: balcap`` and ``aggregation: normalize_then_sum`` (the
reward kwargs a recipe sets); verl's ``BatchRewardManager`` calls it and verl's ``compute_advantage`` runs the
``genrm_cgdpo`` estimator on the reward tensor. Runs in an environment with verl installed, and genrm beside it.
"""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo.ray_trainer import RayPPOTrainer, compute_advantage
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.workers.reward_manager.batch import BatchRewardManager

from genrm.methods.balcap.models import BalCapInstance
from genrm.training.tiny_model import build_tokenizer

REWARD_FILE = Path(__file__).resolve().parents[1] / "policy_rl" / "verl_reward.py"


def main() -> None:
    path, judge, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    with open(path, encoding="utf-8") as handle:
        instances = [BalCapInstance.model_validate_json(line) for line in handle if line.strip()]
    rows = [(n, instance, text) for n, instance in enumerate(instances) for text in instance.responses]
    tokenizer = build_tokenizer([t for i in instances for t in [i.prompt, i.reference, *i.responses]], vocab_size=400)
    pad = tokenizer.pad_token_id
    prompts = [tokenizer(instance.prompt)["input_ids"] for _, instance, _ in rows]
    responses = [tokenizer(text)["input_ids"] or [pad] for _, _, text in rows]
    prompt_width, response_width = max(map(len, prompts)), max(map(len, responses))
    prompt_ids = torch.tensor([[pad] * (prompt_width - len(p)) + p for p in prompts])
    response_ids = torch.tensor([r + [pad] * (response_width - len(r)) for r in responses])
    response_mask = torch.tensor([[1] * len(r) + [0] * (response_width - len(r)) for r in responses])
    attention = torch.cat([(prompt_ids != pad).long(), response_mask], dim=1)
    truths = [{"style": "rule", "ground_truth": instance.model_copy(update={"responses": []}).model_dump_json()}
              for _, instance, _ in rows]  # fmt: skip
    data = DataProto.from_dict(
        tensors={"prompts": prompt_ids, "responses": response_ids, "attention_mask": attention,
                 "response_mask": response_mask},
        non_tensors={"data_source": np.array(["balcap"] * len(rows), dtype=object),
                     "reward_model": np.array(truths, dtype=object),
                     "extra_info": np.array([{"index": n, "id": i.id} for n, i, _ in rows], dtype=object),
                     "uid": np.array([f"uid-{n}" for n, _, _ in rows], dtype=object),
                     "row": np.array(list(range(len(rows))), dtype=object)},
    )  # fmt: skip
    trainer = SimpleNamespace(_get_dp_size=lambda worker_group, role: 2, actor_rollout_wg=None, config=None)
    RayPPOTrainer._balance_batch(trainer, data, metrics={})
    order = [int(row) for row in data.non_tensor_batch["row"]]
    # the judge is sent the images' bytes, read from the instance file's folder (the reward kwarg image_dir)
    kwargs = {"judge": judge, "method": "balcap", "method_options": options, "aggregation": "normalize_then_sum",
              "image_dir": str(Path(path).parent)}  # fmt: skip
    config = OmegaConf.create({"custom_reward_function": {"path": str(REWARD_FILE), "name": "compute_score_batch",
                                                          "reward_kwargs": kwargs}})  # fmt: skip
    score = get_custom_reward_fn(config)
    out = BatchRewardManager(tokenizer, num_examine=0, compute_score=score)(data, return_dict=True)
    data.batch["token_level_rewards"] = out["reward_tensor"]
    data = compute_advantage(data, adv_estimator="genrm_cgdpo")
    advantages = data.batch["advantages"][:, 0].tolist()
    mask, scores = data.batch["response_mask"], out["reward_tensor"].sum(dim=1)
    # an outcome advantage: every token of a response carries it, padding nothing
    uniform = bool(torch.allclose(data.batch["advantages"], scores.unsqueeze(-1) * mask))
    extra = {key: [float(v) for v in values] for key, values in out["reward_extra_info"].items()}
    print(json.dumps({
        "rows": order, "scores": scores.tolist(), "advantages": advantages, "uniform": uniform, "extra": extra,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
