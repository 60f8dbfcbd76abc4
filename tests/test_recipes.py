"""Every shipped recipe parses with the parser of its job, as the command would read it (GPU recipes included:
their bf16 is switched off here, everything else is checked by TRL's and transformers' own validation), and
recipes that start from another recipe's output name that output."""

from pathlib import Path

import pytest
import yaml

from genrm.cli.train import train_parser
from genrm.methods.pairwise.commands import pairs_train_parser
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


def _stores():
    from genrm.cli import recipes
    from genrm.cli.main import make_parser

    make_parser()  # every command's module declares its store when it is imported
    return recipes.STORED_COMMANDS


def test_the_stored_fields_of_every_recipe_command_are_those_of_its_parser():
    import json

    from genrm.cli.recipes import FieldStore, short_help

    stores = _stores()
    assert {store.command for store, _ in stores} == {"genrm train sft", "genrm train rlvr", "genrm rl"}
    for store, make_parser in stores:
        parser = make_parser()
        stored, now = store.load(), FieldStore.describe(parser)
        written = json.loads(store.path.read_text(encoding="utf-8"))[store.command]
        if written["versions"] != now["versions"]:  # stored under other releases of TRL: its parser is used instead
            assert stored is None
            continue
        # python -m genrm.cli.store_fields stores them again, after a change of a command's fields or of TRL
        assert stored == now, f"{store.path} is not current for {store.command}"
        assert store.help(stored) == short_help(parser)  # --help reads the same from the store as from TRL's parser


def test_a_store_of_other_versions_or_other_own_fields_is_not_used(tmp_path, monkeypatch):
    import dataclasses
    import json

    from genrm.cli import recipes

    store, make_parser = _stores()[0]
    copy = recipes.FieldStore(tmp_path / "fields.json", store.command, store.own)
    copy.write(make_parser())
    assert copy.load() is not None
    stored = json.loads(copy.path.read_text())
    stored[store.command]["versions"]["trl"] = "0.0.1"
    copy.path.write_text(json.dumps(stored))
    assert copy.load() is None  # TRL's parser is made instead: its fields may differ

    copy.write(make_parser())

    @dataclasses.dataclass
    class Grown:
        a_new_field: int = 0

    grown = recipes.FieldStore(copy.path, store.command, lambda: Grown)
    assert grown.load() is None  # a command whose own fields changed since the store was written
    assert recipes.FieldStore(tmp_path / "none.json", store.command, store.own).load() is None
