"""policy_rl: GRPO on the policy against the local GenRM (reward functions for TRL, an adapter for verl)."""
