"""``genrm rl``: GRPO on the policy against a local judge (see :mod:`policy_rl.grpo`).

    genrm rl --config recipes/rl_tiny_cpu.yaml [--max_steps 10 --judge http://127.0.0.1:8000 ...]

Everything after ``rl`` goes to ``trl.TrlParser``; ``genrm rl --help`` lists its own fields and the common ones,
``--help-all`` every field.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from genrm.cli.paths import input_file, output_dir
from genrm.cli.recipes import FieldStore, own_defaults, read_recipe, recipe_parser, run_files_problem, stored_command
from genrm.methods.registry import DEFAULT_METHOD

_EXAMPLE = "genrm rl --config recipes/rl_tiny_cpu.yaml --max_steps 10"


def rl_parser() -> Any:
    """The ``trl.TrlParser`` of ``genrm rl``: recipe keys and ``--flags`` of ``PolicyRLArguments``, ``GRPOConfig``
    and ``ModelConfig``."""
    from trl import GRPOConfig, ModelConfig

    from policy_rl.grpo import PolicyRLArguments

    return recipe_parser((PolicyRLArguments, GRPOConfig, ModelConfig), "genrm rl", _EXAMPLE)


def _own_type() -> type:
    from policy_rl.grpo import PolicyRLArguments

    return PolicyRLArguments


_STORE = stored_command(FieldStore(Path(__file__).with_name("rl.fields.json"), "genrm rl", _own_type), rl_parser)


def _precheck(values: dict[str, Any]) -> str | None:
    """What is wrong with the prompts and the policy a recipe names, before TRL is imported; then the judge is asked
    (:func:`policy_rl.grpo.probe_judge`: it raises JudgeDown when it does not answer)."""
    from policy_rl.grpo import probe_judge

    settings = {**own_defaults(_own_type()), **values}
    problem = run_files_problem(settings, ("train_file",), "build_tiny_policy")
    if problem:
        return problem
    key_env = settings["judge_api_key_env"]
    try:
        probe_judge(str(settings["judge"]), os.environ.get(str(key_env)) if key_env else None)
    except ValueError as exc:
        return str(exc)
    return None


def _cmd_rl(args: argparse.Namespace) -> int:
    from policy_rl.method_reward import JudgeDown

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        read = read_recipe(rl_parser, args.rest, "genrm rl", _EXAMPLE, _STORE, _precheck)
    except JudgeDown as exc:
        print(f"genrm rl: stopped: {exc}", file=sys.stderr)
        return 1
    if read is None:
        return 2
    rl_args, training, model = read
    from policy_rl.grpo import run_rl

    try:
        run_rl(rl_args, training, model)
    except (ValueError, FileNotFoundError) as exc:  # bad prompts, a judge setting of no known form, a bad recipe
        print(f"genrm rl: error: {exc}", file=sys.stderr)
        return 2
    except JudgeDown as exc:
        print(f"genrm rl: stopped: {exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_policy_data(args: argparse.Namespace) -> int:
    from genrm.methods import make_method
    from policy_rl.data import write_policy_data

    try:
        model = make_method(args.method).instance_model
        written = write_policy_data(args.instances, args.output, args.system_prompt, model)
    except (ValueError, OSError) as exc:
        print(f"genrm policy-data: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {written} prompts to {args.output}/train.jsonl (load it with --dataset_name {args.output})")
    return 0


def register(sub: Any) -> None:
    """Add ``rl`` and ``policy-data`` to the ``genrm`` command (through the ``genrm.commands`` entry point)."""
    data = sub.add_parser(
        "policy-data", help="write GRPO prompts from instance JSONL to a dataset folder (for trl grpo, genrm rl)",
        description="Write one prompt row per instance of the reward method (prompt messages and the genrm_instance "
        "column its reward reads) to OUT/train.jsonl, a folder that datasets.load_dataset and trl grpo "
        "--dataset_name read.",
    )  # fmt: skip
    data.add_argument("instances", metavar="INSTANCES.jsonl", type=input_file,
                      help="instance JSONL (responses are ignored)")  # fmt: skip
    data.add_argument("-o", "--output", required=True, metavar="DIR", type=output_dir, help="dataset folder to write")
    data.add_argument("--system-prompt", help="a system message put before every prompt")
    data.add_argument("--method", default=DEFAULT_METHOD, help=f"the reward method whose instances these are "
                      f"({DEFAULT_METHOD})")  # fmt: skip
    data.set_defaults(handler=_cmd_policy_data)
    rl = sub.add_parser(
        "rl", help="GRPO on the policy against a local judge (TRL)", add_help=False, prefix_chars="+",
        description="GRPO on the policy with the rewards of a reward method (rubric by default) from a local "
        "judge. Arguments go to TRL's parser: "
        "--config recipe.yaml and any field of PolicyRLArguments, GRPOConfig and ModelConfig as --flag value.",
    )  # fmt: skip
    rl.add_argument("rest", nargs=argparse.REMAINDER)  # with "+" as prefix, every --flag is left to TRL
    rl.set_defaults(handler=_cmd_rl)
