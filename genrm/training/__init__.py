"""Training the judge: SFT then RLVR with TRL and peft (:mod:`genrm.training.sft`, :mod:`genrm.training.rlvr`,
their shared set-up in :mod:`genrm.training.common`) on each method's records and rewards (the rubric method's:
:mod:`genrm.methods.rubric.judge_rewards`), TRL's image lists mended (:mod:`genrm.training.grpo_images`), and the
tiny judge made here without a download (:mod:`genrm.training.tiny_model`). Importing a module here imports torch,
transformers or TRL only where it trains."""
