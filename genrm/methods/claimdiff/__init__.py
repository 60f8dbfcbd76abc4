"""The claimdiff reward method (ClaimDiff-RL): claim-level differences between a policy's caption and a reference
caption, ruled on against the image by a judge the user serves, turned into a reward by fixed rules.

:mod:`.method` (the plug-in), :mod:`.models` (instance, answers, records), :mod:`.prompts` (what the judge is sent),
:mod:`.reading` (reading its JSON or plain-text answer), :mod:`.rewards` (the reward modes, severity weights, the
hedging penalty, the format part), :mod:`.judge_payload` (the source's reward-server payload, for its verl reward
manager), :mod:`.judge_training` (teacher labels, SFT and RLVR records, the F1 reward), :mod:`.scene_judge` (a
scripted judge over synthetic scenes, for tests and benchmarks).
"""
