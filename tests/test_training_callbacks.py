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
