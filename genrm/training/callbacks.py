"""What every training run of this project adds to its ``transformers`` trainer (judge SFT and RLVR, policy GRPO):

- :func:`stop_after`: a time budget (``stop_after_s``) that ends the run at the end of a step, keeping the steps made;
- :class:`InterruptCheckpoint`: Ctrl-C saves a checkpoint at the end of the step under way, then stops (a second
  Ctrl-C stops at once), so that an interrupted run resumes with ``--resume_from_checkpoint last`` where it stopped,
  not at the last ``save_steps``;
- :class:`NoSpreadWarning`: a warning in the log when GRPO's groups have had no reward spread for several logged
  steps in a row (TRL's ``frac_reward_zero_std`` at 1): GRPO's advantages are then all zero and the run learns
  nothing, which its loss alone does not show;
- :class:`TiedWeightsNote` and :func:`quiet_upstream_deprecations`: no message that misleads, on resume (the output
  embeddings a model ties to its input embeddings are not in a checkpoint, and ``transformers`` calls them missing) or
  on every run (TRL's configs still set the ``gradient_checkpointing`` names that ``transformers`` 5 deprecates).

``transformers`` is imported only when a callback is made.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import warnings
from typing import Any

logger = logging.getLogger(__name__)

#: Logged steps in a row with no reward spread in any group before the warning.
NO_SPREAD_LOGS = 5


def _callback_base() -> type:
    from transformers import TrainerCallback

    return TrainerCallback


def stop_after(seconds: float) -> Any:
    """A ``transformers.TrainerCallback`` that ends training at the end of the first step that finishes ``seconds``
    (> 0) or more after training began (a run held to a time budget keeps the steps it made)."""
    if not seconds > 0:
        raise ValueError(f"stop_after_s must be a positive number of seconds, got {seconds}")

    class StopAfter(_callback_base()):  # type: ignore[misc]
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.deadline = time.monotonic() + seconds

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if time.monotonic() >= self.deadline:
                logger.info("stop_after_s: %g s of training reached at step %d; stopping", seconds, state.global_step)
                control.should_training_stop = True
            return control

    return StopAfter()


class InterruptCheckpoint:
    """Ctrl-C during training: the step under way finishes, a full checkpoint (model, optimizer, trainer state) is
    saved in the output folder and training stops; ``interrupted`` then says so and the caller raises
    KeyboardInterrupt. A second Ctrl-C stops at once. Only where training runs in the main thread (signals are
    delivered there); elsewhere Ctrl-C behaves as without it."""

    def __init__(self) -> None:
        self.interrupted = False
        self.step: int | None = None
        self._previous: Any = None
        self.callback = self._make()

    def _on_signal(self, number: int, frame: Any) -> None:
        if self.interrupted:  # the second Ctrl-C: no waiting for the step
            raise KeyboardInterrupt
        self.interrupted = True
        logger.warning("Ctrl-C: saving a checkpoint at the end of this step, then stopping (Ctrl-C again to stop "
                       "at once, without it)")  # fmt: skip

    def _make(self) -> Any:
        owner = self

        class OnInterrupt(_callback_base()):  # type: ignore[misc]
            def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                if threading.current_thread() is threading.main_thread():
                    owner._previous = signal.signal(signal.SIGINT, owner._on_signal)

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
                if owner.interrupted:
                    owner.step = state.global_step
                    control.should_save = True
                    control.should_training_stop = True
                return control

            def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                owner.restore()

        return OnInterrupt()

    def restore(self) -> None:
        """Put back the Ctrl-C handler that was there before training (idempotent)."""
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


class NoSpreadWarning:
    """Warns once per stretch of :data:`NO_SPREAD_LOGS` logged steps in a row in which no group of GRPO's samples
    had rewards that differ (``frac_reward_zero_std`` 1), naming the steps and the mean reward; again after a
    stretch with spread. Other trainers log no such figure and are never warned about."""

    def __init__(self, logs: int = NO_SPREAD_LOGS) -> None:
        if logs < 1:
            raise ValueError(f"the no-spread warning needs at least 1 log, got {logs}")
        self.logs = logs
        self.flat: list[tuple[int, float | None]] = []
        self.warned = 0
        owner = self

        class OnLog(_callback_base()):  # type: ignore[misc]
            def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                       **kwargs: Any) -> None:  # fmt: skip
                owner.observe(state.global_step, logs or {})

        self.callback = OnLog()

    def observe(self, step: int, logs: dict[str, Any]) -> None:
        """Take one log entry (TRL's metrics at ``step``); warn when the stretch reaches ``logs`` entries."""
        share = logs.get("frac_reward_zero_std")
        if not isinstance(share, (int, float)):
            return
        if share < 1.0:
            self.flat = []
            return
        reward = logs.get("reward")
        self.flat.append((step, float(reward) if isinstance(reward, (int, float)) else None))
        if len(self.flat) != self.logs:
            return
        self.warned += 1
        rewards = [r for _, r in self.flat if r is not None]
        mean = f"{sum(rewards) / len(rewards):.3g}" if rewards else "unknown"
        logger.warning(
            "steps %d-%d: no group of samples had rewards that differ (frac_reward_zero_std 1, mean reward %s), so "
            "GRPO's advantages are all 0 and these steps teach nothing. If the reward is 0 everywhere, the model "
            "never writes what is rewarded (a judge that never writes the answer format: train SFT longer); if it "
            "is the top reward everywhere, the prompts are too easy (train on the ones it gets wrong). More samples "
            "per prompt (num_generations) or a higher temperature also spread them.",
            self.flat[0][0], self.flat[-1][0], mean,
        )  # fmt: skip


class TiedWeightsNote(logging.Filter):
    """On ``transformers.trainer``'s logger while a run resumes: its warning that ``lm_head.weight`` is missing from
    the checkpoint, for a model whose output embeddings are its input embeddings (so no checkpoint stores them, and
    they are tied again after loading), becomes one line at info level that says so."""

    _MISSING = "There were missing keys in the checkpoint model loaded: ['lm_head.weight']."

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() == self._MISSING:
            record.msg = "lm_head.weight is tied to the input embeddings, so checkpoints do not store it"
            record.args = ()
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def ties_output_embeddings(model: Any) -> bool:
    """Whether ``model``'s output embeddings are its input embeddings (the same tensor)."""
    try:
        output, inputs = model.get_output_embeddings(), model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        return False
    return output is not None and inputs is not None and output.weight is inputs.weight


def quiet_upstream_deprecations() -> None:
    """Hide the two FutureWarnings every TRL run gives under ``transformers`` 5 (TRL's configs set
    ``gradient_checkpointing``, its trainers read ``is_gradient_checkpointing``): they are about TRL's code, which a
    user cannot act on, and they came before every error of a failed run. For the training commands only."""
    pattern = r"`(is_)?gradient_checkpointing\w*` is deprecated"
    warnings.filterwarnings("ignore", message=pattern, category=FutureWarning)
