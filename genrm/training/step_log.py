"""One short line per logged training step, in place of the metrics dict ``transformers`` prints (a GRPO step logs
about 30 figures, over 1,000 characters): the step, the reward and each reward function's mean, the KL, the share of
groups with no reward spread, then the loss and the learning rate. Every figure is still in ``log_history.json``.

``transformers`` is imported only when :func:`compact_progress` swaps a trainer's printer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any


def _number(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1e4 else f"{value:.0f}"


def _share(value: float) -> str:
    return f"{value:.0%}"


#: The figures a step line shows, in order, when the log has them: (log key, label, format). The reward functions'
#: means come right after ``reward``; any other key is left to ``log_history.json``.
STEP_FIGURES: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("reward", "reward", _number),
    ("kl", "kl", _number),
    ("frac_reward_zero_std", "no spread", _share),
    ("completions/mean_length", "length", lambda v: f"{v:.0f}"),
    ("correct", "correct", _share),
    ("consistent", "consistent", _share),
    ("swap_agreement", "swap agreement", _share),
    ("a_rate", "A rate", _share),
    ("groups_skipped", "groups skipped", lambda v: f"{v:.0f}"),
    ("loss", "loss", _number),
    ("mean_token_accuracy", "token accuracy", _share),
    ("learning_rate", "lr", lambda v: f"{v:.2g}"),
)


def _reward_name(key: str) -> str | None:
    """``format`` for TRL's ``rewards/format_reward_func/mean``; None for any other key."""
    if not (key.startswith("rewards/") and key.endswith("/mean")):
        return None
    name = key[len("rewards/") : -len("/mean")]
    for suffix in ("_reward_func", "_reward", "_func"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def step_line(step: int, max_steps: int, logs: Mapping[str, Any]) -> str:
    """The line of one log entry (``logs``: the metrics a trainer logged at ``step`` of ``max_steps``; 0 or less when
    unknown): ``step 12/240  reward 0.62  format 0.95  content 0.41  kl 0.003  no spread 25%  loss 0.012  lr 1e-05``.
    The run's closing entry (``train_runtime``) is ``trained 240 steps in 812 s, mean loss 0.011``; an evaluation
    entry shows its ``eval_`` figures. A judge that failed on part of the samples (a reward function's
    ``.../judge_failed`` share above 0) is named in the line."""
    numbers = {k: float(v) for k, v in logs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    numbers = {k: v for k, v in numbers.items() if math.isfinite(v)}
    if "train_runtime" in numbers:
        loss = f", mean loss {_number(numbers['train_loss'])}" if "train_loss" in numbers else ""
        return f"trained {step} steps in {numbers['train_runtime']:.0f} s{loss}"
    where = f"step {step}/{max_steps}" if max_steps > 0 else f"step {step}"
    timing = ("_runtime", "_per_second")
    evaluated = [(k, v) for k, v in numbers.items() if k.startswith("eval_") and not k.endswith(timing)]
    if evaluated:
        return f"{where} evaluation  " + "  ".join(f"{k[len('eval_') :]} {_number(v)}" for k, v in evaluated)
    parts = [where]
    for key, label, show in STEP_FIGURES:
        if key in numbers:
            parts.append(f"{label} {show(numbers[key])}")
        if key == "reward":
            parts += [f"{name} {_number(numbers[k])}" for k in numbers if (name := _reward_name(k)) is not None]
    failed = max((v for k, v in numbers.items() if k.endswith("/judge_failed")), default=0.0)
    if failed > 0:
        parts.append(f"judge failed {_share(failed)}")
    return "  ".join(parts)


def compact_progress(trainer: Any) -> None:
    """Make ``trainer`` (a ``transformers.Trainer``) print :func:`step_line` for each log instead of the metrics dict,
    in its progress bar (or on standard output when ``disable_tqdm``); its other callbacks are left as they are."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    class CompactProgress(ProgressCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:  # fmt: skip
            if state.is_world_process_zero and self.training_bar is not None:
                self.training_bar.write(step_line(state.global_step, state.max_steps, logs or {}))

    class CompactPrinter(PrinterCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:  # fmt: skip
            if state.is_world_process_zero:
                print(step_line(state.global_step, state.max_steps, logs or {}), flush=True)

    for plain, compact in ((ProgressCallback, CompactProgress), (PrinterCallback, CompactPrinter)):
        if any(type(callback) is plain for callback in trainer.callback_handler.callbacks):
            trainer.remove_callback(plain)
            trainer.add_callback(compact)
