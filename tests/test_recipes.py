"""Every shipped recipe parses with the parser of its job, as the command would read it (GPU recipes included:
their bf16 is switched off here, everything else is checked by TRL's and transformers' own validation), and
recipes that start from another recipe's output name that output."""

from pathlib import Path

import pytest
import yaml

from genrm.cli.pairs import pairs_train_parser
from genrm.cli.train import train_parser
from policy_rl.cli import rl_parser

RECIPES = sorted((Path(__file__).resolve().parents[1] / "recipes").glob("*.yaml"))
ROOT = RECIPES[0].parents[1]


def _parser(name: str):
    job = name.split("_", 1)[0]
    if job == "pairs":
        return pairs_train_parser()
    return rl_parser() if job == "rl" else train_parser(job)


def _parse(path: Path):
    if path.name.startswith("pairs_"):  # the pairwise judge's own loop: one dataclass, no TRL config
        (arguments,) = _parser(path.name).parse_args_and_config(args=["--config", str(path)])
        return arguments, arguments, arguments
    args = ["--config", str(path), "--bf16", "false", "--use_cpu", "true"]  # GPU recipes: the rest is checked
    return _parser(path.name).parse_args_and_config(args=args)


def test_the_recipes_are_found():
    assert {"sft_tiny_cpu.yaml", "rlvr_tiny_cpu.yaml", "rl_tiny_cpu.yaml", "sft_qwen3_vl_lora.yaml"} <= {
        p.name for p in RECIPES
    }


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_a_recipe_parses_and_its_data_is_shipped(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    data, training, model = _parse(path)
    assert model.model_name_or_path and training.output_dir
    assert (ROOT / data.train_file).is_file()
    if getattr(data, "eval_file", None):
        assert (ROOT / data.eval_file).is_file()
    if hasattr(data, "checked_exposure"):
        data.checked_exposure()
    if hasattr(training, "generation_batch_size"):
        assert training.generation_batch_size % training.num_generations == 0


def test_a_recipe_that_starts_from_a_run_names_the_recipe_that_makes_it(monkeypatch):
    monkeypatch.chdir(ROOT)
    raw = {p.name: yaml.safe_load(p.read_text()) for p in RECIPES}
    outputs = {config["output_dir"]: name for name, config in raw.items()}
    for name, config in raw.items():
        base = config["model_name_or_path"]
        builds = ("build_tiny_model", "build_tiny_policy", "build_tiny_judge")
        if not base.startswith("runs/") or any(config.get(flag) for flag in builds):
            continue
        assert base in outputs, f"{name} starts from {base}, which no recipe writes"
        assert raw[outputs[base]].get("exposure", "minimal") == config.get("exposure", "minimal"), name


def test_an_unknown_recipe_key_is_refused(tmp_path):
    recipe = tmp_path / "old.yaml"
    recipe.write_text("model_name_or_path: x\nuse_cpu: true\nwarmup_ratio: 0.1\n")
    with pytest.raises(ValueError, match="warmup_ratio"):
        train_parser("sft").parse_args_and_config(args=["--config", str(recipe)])


@pytest.mark.parametrize("path", sorted((ROOT / "recipes" / "accelerate").glob("*.yaml")), ids=lambda p: p.name)
def test_the_accelerate_configs_name_a_distributed_type(path):
    config = yaml.safe_load(path.read_text())
    assert config["distributed_type"] in {"DEEPSPEED", "FSDP", "MULTI_GPU"}


@pytest.mark.parametrize(
    "path", [p for p in RECIPES if yaml.safe_load(p.read_text()).get("use_cpu")], ids=lambda p: p.name
)
def test_a_cpu_recipe_trains_in_fp32(path, monkeypatch):
    # TRL turns bf16 on by default, also on CPU, where autocast to bf16 is emulated without bf16 units (6x slower)
    monkeypatch.chdir(ROOT)
    _, training, _ = _parser(path.name).parse_args_and_config(args=["--config", str(path)])
    assert training.use_cpu and not training.bf16 and not training.fp16
