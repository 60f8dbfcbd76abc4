"""verl's BatchRewardManager scoring two responses with compute_score_batch; prints the scores as JSON.

$GENRM_VERL_PYTHON tests/verl_contract.py GROUND_TRUTH_JSON
"""

import json
import sys

import numpy as np
import torch
from verl import DataProto
from verl.workers.reward_manager.batch import BatchRewardManager

from genrm.tiny_model import build_tokenizer
from policy_rl.verl_reward import compute_score_batch


def main() -> None:
    truth = sys.argv[1]
    responses = ["so it is \\boxed{41}", "so it is \\boxed{42}"]
    tokenizer = build_tokenizer(["What is 6 x 7?"] + responses, vocab_size=300)
    prompt = tokenizer("What is 6 x 7?")["input_ids"]
    encoded = [tokenizer(r)["input_ids"] for r in responses]
    width = max(map(len, encoded))
    pad = tokenizer.pad_token_id
    prompts = torch.tensor([prompt] * 2)
    response_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids in encoded])
    attention = torch.cat([torch.ones_like(prompts), (response_ids != pad).long()], dim=1)
    data = DataProto.from_dict(
        tensors={"prompts": prompts, "responses": response_ids, "attention_mask": attention},
        non_tensors={"data_source": np.array(["genrm"] * 2, dtype=object),
                     "reward_model": np.array([{"ground_truth": truth, "style": "rule"}] * 2, dtype=object),
                     "extra_info": np.array([{"index": 0}, {"index": 0}], dtype=object)},
    )  # fmt: skip
    manager = BatchRewardManager(tokenizer, num_examine=0, compute_score=compute_score_batch)
    out = manager(data, return_dict=True)
    scores = out["reward_tensor"].sum(dim=1).tolist()
    print(json.dumps({"scores": scores, "extra_keys": sorted(out["reward_extra_info"])}))


if __name__ == "__main__":
    main()
