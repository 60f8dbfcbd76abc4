"""Policy prompts for TRL's ``GRPOTrainer`` from instance JSONL (the format ``genrm score`` and the server read).

Each instance becomes one row: ``prompt`` (the conversation the policy answers: an optional system message and the
instance's prompt), ``genrm_instance`` (the instance without responses, as a JSON string, so Arrow never has to
unify rubrics of different shapes; the reward function reads its rubric from there) and, for vision-language
policies, ``images`` (TRL's vision column: the decoded image, or an empty list for an instance without one, so a set
may mix both). The judge's view is decided by the reward's exposure, not by the dataset: under ``minimal`` the image
goes to the policy and never to the judge.

Responses in the file are ignored: the policy writes its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from genrm.jsonl import read_models
from genrm.methods.rubric.models import Instance
from policy_rl.method_reward import INSTANCE_COLUMN


def policy_record(instance: Any, system_prompt: str | None = None, with_image: bool = False) -> dict[str, Any]:
    """One GRPO prompt row of ``instance`` (any method's instance with a ``prompt`` and an ``image``; ``images`` holds
    the reference as is; :func:`policy_dataset` decodes)."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages.append({"role": "user", "content": instance.prompt})
    row: dict[str, Any] = {
        "prompt": messages,
        INSTANCE_COLUMN: instance.model_copy(update={"responses": []}).model_dump_json(exclude_none=True),
    }
    if with_image:
        row["images"] = [instance.image] if instance.image else []
    return row


def read_instances(lines: Iterable[str], source: str = "input", model: type[BaseModel] = Instance) -> list[Any]:
    """Instances of ``model`` (a reward method's instance model; the rubric's by default) from JSONL lines; raises
    ValueError naming the first bad line."""
    instances = read_models(lines, model, source)
    if not instances:
        raise ValueError(f"{source} has no instance")
    return instances


def policy_dataset(
    path: str | Path,
    system_prompt: str | None = None,
    vision: bool = False,
    limit: int | None = None,
    model: type[BaseModel] = Instance,
) -> Any:
    """A ``datasets.Dataset`` of policy prompts from an instance JSONL file.

    Args:
        path: instance JSONL.
        system_prompt: a system message put before every prompt (None for none).
        vision: keep each instance's image in an ``images`` column (decoded; ``[]`` for an instance without one,
            and at least one instance must have one) for a vision-language policy.
        limit: use only the first ``limit`` instances.
        model: the reward method's instance model (the rubric's by default).
    """
    from datasets import Dataset

    path = Path(path)
    with path.open(encoding="utf-8") as source:
        instances = read_instances(source, str(path), model)[:limit]
    rows = [policy_record(instance, system_prompt, vision) for instance in instances]
    if vision:
        from genrm.engine.images import ImageError, load_image

        if not any(instance.image for instance in instances):
            raise ValueError(f"no instance of {path} has an image, and the policy is set to see them (vision)")
        for row, instance in zip(rows, instances, strict=True):
            try:
                row["images"] = [load_image(instance.image, path.parent)] if instance.image else []
            except ImageError as exc:
                raise ValueError(f"instance {instance.id}: {exc}") from None
    return Dataset.from_list(rows)


def write_policy_data(
    instances_path: str | Path,
    out_dir: str | Path,
    system_prompt: str | None = None,
    model: type[BaseModel] = Instance,
) -> int:
    """Write the policy prompts of an instance JSONL file (instances of ``model``, a reward method's instance model)
    to ``out_dir/train.jsonl`` (text prompts; a folder that ``datasets.load_dataset`` reads with a ``train`` split).
    Returns the number of rows."""
    import json

    path = Path(instances_path)
    with path.open(encoding="utf-8") as source:
        instances = read_instances(source, str(path), model)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "train.jsonl").open("w", encoding="utf-8") as sink:
        for instance in instances:
            sink.write(json.dumps(policy_record(instance, system_prompt), ensure_ascii=False) + "\n")
    return len(instances)
