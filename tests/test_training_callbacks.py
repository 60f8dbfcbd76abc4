"""What every training run adds to its trainer, without training: the no-spread warning of GRPO runs, the note that
replaces transformers' missing-key warning for tied embeddings, and the filter of TRL's deprecation warnings (the
Ctrl-C checkpoint is tested on a real run in tests/test_train_judge.py)."""

import logging
import warnings

import pytest

from genrm.training.callbacks import NO_SPREAD_LOGS, NoSpreadWarning, TiedWeightsNote, quiet_upstream_deprecations


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_no_spread_for_several_logs_in_a_row_is_warned_once_per_stretch(caplog):
    watch = NoSpreadWarning()
    flat = {"frac_reward_zero_std": 1.0, "reward": 0.0}
    with caplog.at_level(logging.WARNING):
        for step in range(1, NO_SPREAD_LOGS):
            watch.observe(step, flat)
        watch.observe(NO_SPREAD_LOGS, {"frac_reward_zero_std": 0.75, "reward": 0.2})  # spread: the stretch ends
        assert _warnings(caplog) == []
        for step in range(10, 10 + 2 * NO_SPREAD_LOGS):
            watch.observe(step, flat)
            watch.observe(step, {"loss": 0.1})  # a log without the figure changes nothing
    (message,) = _warnings(caplog)
    assert f"steps 10-{10 + NO_SPREAD_LOGS - 1}" in message and "mean reward 0" in message
    assert "train SFT longer" in message and watch.warned == 1
    watch.observe(30, {"frac_reward_zero_std": 0.5})
    for step in range(31, 31 + NO_SPREAD_LOGS):
        watch.observe(step, {"frac_reward_zero_std": 1.0, "reward": 1.0})
    assert watch.warned == 2 and "mean reward 1" in _warnings(caplog)[-1]


def test_a_trainer_that_logs_no_spread_figure_is_never_warned_about(caplog):
    watch = NoSpreadWarning(logs=1)
    with caplog.at_level(logging.WARNING):
        for step in range(20):
            watch.observe(step, {"loss": 1.0, "reward": 0.0})
    assert watch.warned == 0 and _warnings(caplog) == []
    with pytest.raises(ValueError, match="at least 1"):
        NoSpreadWarning(logs=0)


def test_the_missing_tied_embeddings_become_a_note_and_other_missing_keys_stay_warnings(caplog):
    logger = logging.getLogger("genrm.test.trainer")
    logger.addFilter(TiedWeightsNote())
    with caplog.at_level(logging.INFO, logger="genrm.test.trainer"):
        logger.warning("There were missing keys in the checkpoint model loaded: ['lm_head.weight'].")
        logger.warning("There were missing keys in the checkpoint model loaded: ['model.norm.weight'].")
    tied, other = caplog.records
    assert tied.levelno == logging.INFO and "tied to the input embeddings" in tied.getMessage()
    assert other.levelno == logging.WARNING and "model.norm.weight" in other.getMessage()


def test_trls_deprecated_names_are_not_warned_about_and_other_warnings_are():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_upstream_deprecations()
        warnings.warn("`gradient_checkpointing` is deprecated (v6).", FutureWarning, stacklevel=1)
        warnings.warn("`is_gradient_checkpointing` is deprecated (v6).", FutureWarning, stacklevel=1)
        warnings.warn("`something_else` is deprecated", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["`something_else` is deprecated"]


def test_a_grpo_step_is_one_line_with_the_reward_each_function_the_kl_and_the_no_spread_share():
    from genrm.training.step_log import step_line

    logs = {"loss": 0.0123, "grad_norm": 1.2, "learning_rate": 1e-5, "num_tokens": 1234.0, "epoch": 0.1,
            "completions/mean_length": 87.3, "rewards/format_reward_func/mean": 0.95,
            "rewards/format_reward_func/std": 0.1, "rewards/content_reward_func/mean": 0.41, "reward": 1.36,
            "reward_std": 0.2, "frac_reward_zero_std": 0.25, "kl": 0.0031, "entropy": 0.5}  # fmt: skip
    assert step_line(12, 240, logs) == (
        "step 12/240  reward 1.36  format 0.95  content 0.41  kl 0.0031  no spread 25%  length 87  loss 0.0123"
        "  lr 1e-05"
    )
    assert (
        step_line(240, 240, {"train_runtime": 812.3, "train_loss": 0.011})
        == "trained 240 steps in 812 s, mean loss 0.011"
    )
    sft = step_line(5, 0, {"loss": 2.3, "mean_token_accuracy": 0.71, "learning_rate": 2e-5, "loss_nan": float("nan")})
    assert sft == "step 5  loss 2.3  token accuracy 71%  lr 2e-05"
    # a reward server that failed on some samples is said in the line (those samples carry no reward)
    failed = step_line(3, 10, {"reward": 0.5, "rewards/rubric_reward/mean": 0.5, "rubric_reward/judge_failed": 0.125})
    assert failed == "step 3/10  reward 0.5  rubric 0.5  judge failed 12%"
    assert step_line(4, 10, {"eval_loss": 0.5, "eval_runtime": 3.0}) == "step 4/10 evaluation  loss 0.5"
