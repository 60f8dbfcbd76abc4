"""TRL's ``GRPOTrainer`` with rewards computed over whole groups, also when a group spans processes.

Where the group is put together: TRL samples each prompt ``num_generations`` times in a row of the global batch and
hands every process a contiguous slice of it, so with several processes one prompt's completions can sit on
different processes. A reward function only ever sees its own process's slice. ``GRPOTrainer._calculate_rewards``
then gathers the reward columns of every process before normalizing them per group; this subclass hooks in right
there: each :class:`~policy_rl.method_reward.MethodReward` of a method with rewards over groups
(:class:`genrm.methods.group_rewards.RewardsOverGroups`: the rubric method's remap) has judged its local completions
(the expensive part, kept where the completions are), the outcomes of every process are gathered
(``accelerate.utils.gather_object``, in process order, which is the order of the gathered rewards), and the reward
column is recomputed over whole groups of ``num_generations`` by the method. Every process computes the same global
rewards, as TRL expects, and then takes its own slice for the advantages.

Other ways were weighed: grouping on the reward server by a group id would need every process's requests to meet
in one place and wait for each other (a barrier over HTTP); and normalizing advantages ourselves would duplicate
TRL's options (``scale_rewards``, ``multi_objective_aggregation``). The hook changes only the reward values.

A method's advantage penalty (the balcap method's linear length rule, BalCapRL A.5: subtracted from the normalized
advantage, which no reward value can express) is subtracted from TRL's advantages of the process's own rows, right
after TRL forms them.

A vision-language policy may train on prompts with and without images in one batch
(:class:`genrm.training.grpo_images.MixedImageGRPOTrainer`).

Needs torch, TRL and accelerate.
"""

from __future__ import annotations

from typing import Any

from genrm.methods.group_rewards import RewardsOverGroups
from genrm.training.grpo_images import MixedImageGRPOTrainer
from policy_rl.method_reward import ColumnReward, MethodReward


class MethodGRPOTrainer(MixedImageGRPOTrainer):
    """``GRPOTrainer`` whose rewards of a method with rewards over groups are computed over whole groups, and whose
    advantages carry a method's advantage penalty."""

    def _generate_and_score_completions(self, inputs: Any) -> Any:
        import torch

        output = super()._generate_and_score_completions(inputs)
        columns = next((f for f in self.reward_funcs if isinstance(f, ColumnReward)), None)
        if columns is not None and any(columns.batch.penalties):
            advantages = output["advantages"]
            penalties = columns.batch.penalties
            if len(penalties) != advantages.shape[0]:
                raise RuntimeError(f"{len(penalties)} advantage penalties for {advantages.shape[0]} advantages")
            output["advantages"] = advantages - torch.tensor(penalties, dtype=advantages.dtype,
                                                             device=advantages.device)  # fmt: skip
        return output

    def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> Any:
        import torch
        from accelerate.utils import gather_object

        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        group_size = self.num_generations if self.model.training else self.num_generations_eval
        for index, func in enumerate(self.reward_funcs):
            if not (isinstance(func, MethodReward) and isinstance(func.method, RewardsOverGroups)):
                continue
            outcomes = gather_object(func.pending) if self.accelerator.num_processes > 1 else list(func.pending)
            if len(outcomes) != rewards_per_func.shape[0]:
                raise RuntimeError(f"{len(outcomes)} judged completions for {rewards_per_func.shape[0]} rewards")
            values = [float("nan") if r is None else r for r in func.rewards(outcomes, group_size)]
            rewards_per_func[:, index] = torch.tensor(
                values, dtype=rewards_per_func.dtype, device=rewards_per_func.device
            )
        return rewards_per_func
