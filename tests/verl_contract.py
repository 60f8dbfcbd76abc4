"""verl's own trainer reordering and reward manager around our batch reward function; prints the outcome as JSON.

    $GENRM_VERL_PYTHON tests/verl_contract.py INSTANCES_JSONL

The instances' responses become one verl batch, each prompt's rows together as ``rollout.n`` makes them. verl's
``RayPPOTrainer._balance_batch`` (run by ``fit()`` before the reward when ``trainer.balance_batch`` is on, its
default) reorders the rows across two data-parallel ranks; verl's ``BatchRewardManager`` then calls
``compute_score_batch`` on the reordered batch. Each row's reward is compared with the reward ``genrm score`` gives
the same response in its group. Runs in an environment with verl installed, and genrm beside it.
"""

import json
import sys
from types import SimpleNamespace

import numpy as np
import torch
from verl import DataProto
from verl.trainer.ppo.ray_trainer import RayPPOTrainer
from verl.workers.reward_manager.batch import BatchRewardManager

from genrm.methods.rubric.method import score_instance
from genrm.methods.rubric.models import Instance
from genrm.training.tiny_model import build_tokenizer
from policy_rl.verl_reward import compute_score_batch, verl_row


def _batch(instances: list[Instance], tokenizer) -> DataProto:
    rows = [(n, instance, text) for n, instance in enumerate(instances) for text in instance.responses]
    prompts = [tokenizer(instance.prompt)["input_ids"] for _, instance, _ in rows]
    responses = [tokenizer(text)["input_ids"] for _, _, text in rows]
    pad = tokenizer.pad_token_id
    prompt_width, response_width = max(map(len, prompts)), max(map(len, responses))
    prompt_ids = torch.tensor([[pad] * (prompt_width - len(p)) + p for p in prompts])  # left-padded, as verl's
    response_ids = torch.tensor([r + [pad] * (response_width - len(r)) for r in responses])
    attention = torch.cat([(prompt_ids != pad).long(), (response_ids != pad).long()], dim=1)
    ground_truths = [verl_row(instance, n)["reward_model"] for n, instance, _ in rows]
    return DataProto.from_dict(
        tensors={"prompts": prompt_ids, "responses": response_ids, "attention_mask": attention},
        non_tensors={"data_source": np.array(["genrm"] * len(rows), dtype=object),
                     "reward_model": np.array(ground_truths, dtype=object),
                     "extra_info": np.array([{"index": n, "id": i.id} for n, i, _ in rows], dtype=object),
                     "row": np.array(list(range(len(rows))), dtype=object)},
    )  # fmt: skip


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        instances = [Instance.model_validate_json(line) for line in handle if line.strip()]
    texts = [text for instance in instances for text in [instance.prompt, *instance.responses]]
    tokenizer = build_tokenizer(texts, vocab_size=400)
    data = _batch(instances, tokenizer)
    trainer = SimpleNamespace(_get_dp_size=lambda worker_group, role: 2, actor_rollout_wg=None, config=None)
    RayPPOTrainer._balance_batch(trainer, data, metrics={})  # verl's own reordering, as fit() runs it
    order = [int(row) for row in data.non_tensor_batch["row"]]
    manager = BatchRewardManager(tokenizer, num_examine=0, compute_score=compute_score_batch)
    out = manager(data, return_dict=True)
    scores = out["reward_tensor"].sum(dim=1).tolist()

    expected = [reward for instance in instances for reward in score_instance(instance).rewards]
    print(json.dumps({
        "rows": len(order), "moved": sum(row != place for place, row in enumerate(order)),
        "rewards": [[order[place], scores[place]] for place in range(len(order))], "expected": expected,
        "extra_keys": sorted(out["reward_extra_info"]),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
