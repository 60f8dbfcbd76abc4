"""verl's advantage estimator for an advantage the reward function already formed (``genrm_cgdpo``).

verl's estimators see one scalar per response and normalize it themselves: ``reinforce_plus_plus_baseline``
subtracts each group's mean and whitens over the batch, GRPO normalizes each group. c-GDPO with the balcap method's
linear length rule (BalCapRL eq. 2.4-2.6, then A.5) subtracts a per-response penalty *after* the batch
normalization, which none of them can express: a penalty shared by a group cancels in the group's mean, and the
others are rescaled by the whitening. So :func:`policy_rl.verl_reward.compute_score_batch` with ``aggregation:
normalize_then_sum`` forms the whole advantage over verl's batch (TRL's arithmetic,
:func:`genrm.methods.columns.decoupled_advantages`, less the penalty) and hands it over as the score; this estimator
takes that score as the advantage of every token of its response, unchanged.

Run verl with ``algorithm.adv_estimator=genrm_cgdpo``. The name is registered with verl
(``verl.trainer.ppo.core_algos.register_adv_est``) when :mod:`policy_rl.verl_reward` is loaded, which verl does in
its trainer's process (``custom_reward_function.path``) before it computes any advantage.
"""

from __future__ import annotations

from typing import Any

#: The name to give ``algorithm.adv_estimator``.
ESTIMATOR = "genrm_cgdpo"


def precomputed_advantage(
    token_level_rewards: Any, response_mask: Any, config: Any = None, **_: Any
) -> tuple[Any, Any]:
    """verl's estimator contract: ``(advantages, returns)``, both (batch, response length) tensors.

    The outcome score (verl puts it on a response's last token; the row's sum) is the response's advantage, put on
    each of its tokens; padding gets 0. Nothing is normalized: the reward function did it over the whole batch."""
    scores = token_level_rewards.sum(dim=-1)
    advantages = scores.unsqueeze(-1) * response_mask
    return advantages, advantages


def register_with_verl() -> bool:
    """Register :func:`precomputed_advantage` as verl's ``genrm_cgdpo`` estimator when verl is installed (once per
    process; loading this module twice registers the same function). False when verl is not installed."""
    try:
        from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est
    except ImportError:
        return False
    if ADV_ESTIMATOR_REGISTRY.get(ESTIMATOR) is not precomputed_advantage:
        register_adv_est(ESTIMATOR)(precomputed_advantage)
    return True
