"""TRL's ``GRPOTrainer`` for vision-language models on batches that mix prompts with and without an image.

A judge trained under the ``vlm`` exposure sees the image of every input that has one, and many inputs have none (a
math question, a time to read from text). TRL 1.16 marks a prompt without images as ``None`` in the image lists it
rebuilds after generation, then hands that list to the model's processor for the log-probability pass; the
processors of transformers 5 accept an empty list for such a row but stop on ``None`` ("only a single or a list of
entries is supported but got type=<class 'NoneType'>"). :class:`MixedImageGRPOTrainer` turns those ``None`` into
``[]`` right where ``_generate`` returns them, and changes nothing else: a batch with no image at all keeps
``images=None``, and generation itself is untouched. The judge's RLVR test runs a mixed batch through it, so a TRL
release that changes this hook fails there and not on a user's GPU.

Needs torch and TRL.
"""

from __future__ import annotations

from typing import Any

from trl import GRPOTrainer


def images_per_row(images: list[Any] | None) -> list[Any] | None:
    """``images`` with every row that has no image as ``[]`` (what the processors read as "no image"); ``None``
    (no image in the whole batch) stays ``None``."""
    if images is None:
        return None
    return [row if row else [] for row in images]


class MixedImageGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` that accepts batches mixing prompts with and without images (see the module docstring)."""

    def _generate(self, prompts: list[Any]) -> tuple[Any, ...]:
        *head, images, tool_images = super()._generate(prompts)
        return (*head, images_per_row(images), tool_images)
