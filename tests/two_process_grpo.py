"""One GRPO step on two CPU processes, each holding half of every group; run with torch.distributed.run.

    python -m torch.distributed.run --nproc_per_node 2 tests/two_process_grpo.py POLICY_DIR OUT_DIR

Each process writes what it judged and the reward column the trainer settled on to OUT_DIR/rank<N>.json.
"""

import json
import os
import sys
from pathlib import Path

from trl import GRPOConfig

from genrm.engine import Judge
from genrm.methods import make_method
from policy_rl.data import policy_dataset
from policy_rl.method_reward import MethodReward
from policy_rl.scorers import JudgeScorer
from policy_rl.trainer import MethodGRPOTrainer


class RecordingTrainer(MethodGRPOTrainer):
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        reward = self.reward_funcs[0]
        record = {"local": [[o.key, list(o.value.raw)] for o in reward.pending], "rewards": rewards[:, 0].tolist(),
                  "processes": self.accelerator.num_processes}  # fmt: skip
        path = Path(sys.argv[2]) / f"rank{self.accelerator.process_index}.json"
        path.write_text(json.dumps(record))
        return rewards


def main() -> None:
    policy, out = sys.argv[1], sys.argv[2]
    args = GRPOConfig(output_dir=out, per_device_train_batch_size=2, num_generations=4, max_completion_length=4,
                      max_steps=1, use_cpu=True, bf16=False, gradient_checkpointing=False, report_to="none",
                      save_strategy="no", temperature=1.0, learning_rate=1e-3, logging_steps=1, seed=0)  # fmt: skip
    dataset = policy_dataset("datasets/policy_rl/yes_no.jsonl", limit=4)
    method = make_method("rubric")
    reward = MethodReward(method, JudgeScorer(Judge(), method))
    trainer = RecordingTrainer(model=policy, reward_funcs=[reward], args=args, train_dataset=dataset)
    trainer.train()
    # The results are on disk: leave without the interpreter's teardown, where gloo's threads now and then abort
    # the process or a rank waits for one that has gone.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
