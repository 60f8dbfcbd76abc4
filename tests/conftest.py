"""Shared pytest configuration: GPU tests are skipped where no CUDA device is present (unless asked to run on the
CPU, :data:`GPU_TESTS_ON`)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from genrm.methods.rubric.models import Instance


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


#: Set to ``cpu`` to run the ``gpu`` tests on the CPU (the GPU command's dry run: ``studies/gpu/run.sh --cpu``).
GPU_TESTS_ON = "GENRM_GPU_TESTS_ON"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(GPU_TESTS_ON) == "cpu":
        return
    if any("gpu" in item.keywords for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


EXAMPLE_SET = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "reward_core.jsonl"


@pytest.fixture(scope="session")
def example_instances() -> list[Instance]:
    """The shipped example set (``datasets/examples/reward_core.jsonl``), validated."""
    return [Instance.model_validate_json(line) for line in EXAMPLE_SET.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (``@pytest.mark.anyio``) run on asyncio, the loop uvicorn serves with."""
    return "asyncio"


@pytest.fixture(scope="session")
def tiny_judge_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained tiny judge checkpoint (``genrm.training.tiny_model``) saved once per test session."""
    from genrm.training.tiny_model import save_tiny_judge

    return save_tiny_judge(tmp_path_factory.mktemp("tiny-judge"))


@pytest.fixture(scope="session")
def sft_judge_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny judge trained by the shipped CPU SFT recipe (``recipes/sft_tiny_cpu.yaml``: 300 steps from a new tiny
    model, about 5 minutes on 2 cores), logged every 20 steps; trained once per session, for the tests that need a
    judge that writes its answer format (slow tests only)."""
    from genrm.cli import main

    root = tmp_path_factory.mktemp("sft")
    args = ["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path", str(root / "base"),
            "--output_dir", str(root / "out"), "--logging_steps", "20"]  # fmt: skip
    assert main(args) == 0
    return root / "out"


@pytest.fixture(scope="session")
def tiny_vlm_judge_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained tiny vision-language judge (LLaVA layout: CLIP encoder + the tiny Qwen3) saved once per session."""
    from genrm.training.tiny_model import save_tiny_vlm_judge

    return save_tiny_vlm_judge(tmp_path_factory.mktemp("tiny-vlm-judge"))


@pytest.fixture
def scene_dir(tmp_path: Path) -> Path:
    """A server's image folder holding the scripted scene judges' images (``park.png``, ``kitchen.png``, ...): the
    server reads them and sends the judge their bytes, from which the scene judges read the scene's name."""
    from genrm.methods.scene_images import SCENES, write_scene_images

    return write_scene_images(tmp_path / "scene-images", SCENES)
