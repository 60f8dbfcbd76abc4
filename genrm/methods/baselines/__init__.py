"""Caption baselines as reward methods, to compare with the caption methods in the same loop, on the same caption
files: ``holistic`` (ClaimDiff-RL's B1, a 0-10 score of the whole caption) and ``rouge_l`` (no judge)."""
