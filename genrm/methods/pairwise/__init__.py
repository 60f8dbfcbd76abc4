"""The pairwise multimodal judge (MJ1): which of two responses better fulfils a prompt, reasoned through a grounded
verification chain (observations, claims, verification, evaluation, two distinct scores) and checked for position
bias by swapping the responses.

:mod:`.models` (a labelled pair, its responses text, images or both), :mod:`.mmrb2` (pairs from MMRB2's benchmark
files), :mod:`.prompts` (the chain, the criteria per task family), :mod:`.reading` (the
tags and ``\\boxed{a, b}``), :mod:`.swap` (the counterfactual swap), :mod:`.rewards` (format, correctness,
consistency, and the group advantages of its GRPO), :mod:`.scene_judge` (scripted judges for tests); its own
commands (``genrm pairs eval|train``, :mod:`.commands`, registered as a ``genrm.commands`` plug-in), the judge's GRPO
with the swap in the loop (:mod:`.grpo`) and its figures on labelled pairs (:mod:`.evaluation`).
"""
