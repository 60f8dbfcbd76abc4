"""Every command the README and docs/ show, checked as a user would meet it.

Each command in a ``bash`` block is one of:

- **run**: executed as written by ``bash`` in a scratch folder (one per page) that sees the repository's
  ``datasets/`` and ``recipes/`` (in the order the page shows them, so a later command finds what an earlier one
  made); a ``genrm serve`` is
  started as its own process, and the ``curl`` lines after it in the same block are sent to it. It must exit 0.
- **a synopsis** (``docs/cli.md``, or a command with placeholders such as ``INPUT.jsonl``, ``SPEC``, ``DIR``): every
  option it names must be one its command's ``--help`` lists.
- **not run here**, with the reason in :data:`NOT_RUN` (a served model, a GPU, another framework, minutes of
  training covered by a named test): its options are checked against ``--help`` as a synopsis's are.

A command that fits none of these fails the test, so a new example in the docs is either run or says why not.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_judge import ServeProcess

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "studies").glob("**/README.md"))]

#: Commands not run here: a pattern (searched in the command) and why.
NOT_RUN: list[tuple[str, str]] = [
    (r"^python3 -m venv", "the fresh-machine set-up: CI runs it on a clean clone"),
    (r"^python -m pytest", "this test suite"),
    (r"^pip install", "an installation step"),
    (
        r"^python -m sglang|--launch|sglang:|openai:|@http|--url http|--judge-url|--backend sglang|@URL|A@\.\.\.",
        "needs a served model",
    ),
    (r"^python -m verl", "needs verl's environment (tests/test_policy_verl.py runs verl's own code)"),
    (r"^python -m vllm", "needs vLLM's environment (tests/test_vllm_engine.py serves a tiny judge with it)"),
    (
        r"^(GENRM_JUDGE=\S+ )?trl grpo",
        "downloads a Qwen3 policy (tests/test_policy_trl_cli.py runs trl grpo on a tiny one)",
    ),
    (r"^accelerate launch|recipes/rl_qwen3|recipes/pairs_grpo_qwen3|_qwen3_.*lora", "needs a GPU and a real model"),
    (r"^python benchmarks/", "a benchmark: minutes, run by hand (docs/benchmarks.md)"),
    (r"^python studies/.*--device cuda", "a study on a GPU"),
    (r"^python studies/", "a study: an hour or more, run by hand (its README; tests/test_judge_learning_study.py)"),
    (r"^bash studies/gpu/fetch_wheels.sh", "downloads wheels (on a networked machine)"),
    (r"^bash studies/gpu/run.sh --cpu", "minutes: tests/test_gpu_command.py runs it"),
    (r"^bash studies/gpu/run.sh", "needs a GPU"),
    (
        r"genrm train (sft|rlvr) --config recipes/(sft|rlvr)_tiny_cpu.yaml$",
        "minutes of training (tests/test_train_judge.py runs these recipes)",
    ),
    (r"--model runs/tiny-judge-rlvr", "needs the RLVR run above (tests/test_train_judge.py)"),
    (r"genrm rl --config recipes/rl_tiny_cpu.yaml", "minutes of GRPO (tests/test_policy_grpo.py runs the recipe)"),
    (r"--config serve.yaml", "a user's settings file"),
    (r"--host 0\.0\.0\.0", "binds every interface"),
]

#: What marks a synopsis: an ALL-CAPS placeholder (``INPUT.jsonl``, ``DIR``, ``SPEC``), ``...``, or ``[--option]``.
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]{2,}(?:\.[a-z]+)?\b|\.\.\.|\s\[-")


@dataclass
class Command:
    page: str
    line: int
    text: str
    block: int

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"


def _commands() -> list[Command]:
    found = []
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        lines, inside, block, pending, start = page.read_text(encoding="utf-8").splitlines(), False, 0, "", 0
        for number, line in enumerate(lines, 1):
            if line.startswith("```"):
                inside, block = line.strip() == "```bash", block + 1
                continue
            if not inside:
                continue
            text = line.split("  #", 1)[0].rstrip() if not pending else line.rstrip()
            if not pending and (not text.strip() or text.lstrip().startswith("#")):
                continue
            if not pending:
                start = number
            if text.endswith("\\"):
                pending += text[:-1].strip() + " "
                continue
            found.append(Command(name, start, (pending + text.strip()).split("  #", 1)[0].strip(), block))
            pending = ""
    return found


COMMANDS = _commands()


def _reason(command: Command) -> str | None:
    return next((why for pattern, why in NOT_RUN if re.search(pattern, command.text)), None)


def _is_synopsis(command: Command) -> bool:
    if command.text.startswith("curl"):
        return False
    return command.page == "docs/cli.md" or bool(PLACEHOLDER.search(command.text))


def _genrm_words(text: str) -> list[list[str]]:
    """The ``genrm`` command lines in ``text`` (alternatives ``sft|rlvr`` expanded), as words."""
    out = []
    for part in re.split(r"\s\|\s", text):
        match = re.search(r"(?:^|\s)(?:-m )?genrm\s+(.*)$", part)
        if not match:
            continue
        words = match.group(1).split()
        subs = [w for w in words[:2] if re.fullmatch(r"[a-z][a-z-]*(\|[a-z-]+)*", w)]
        for first in subs[0].split("|") if subs else []:
            if len(subs) > 1:
                out += [[first, second, *words] for second in subs[1].split("|")]
            else:
                out.append([first, *words])
    return out


_RECIPE_COMMANDS = {("train", "sft"), ("train", "rlvr"), ("rl",), ("pairs", "train")}


def _help(path: tuple[str, ...]) -> str:
    every = "--help-all" if path in _RECIPE_COMMANDS else "--help"  # their --help lists the common fields only
    done = subprocess.run([sys.executable, "-m", "genrm", *path, every], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # fmt: skip
    return done.stdout + done.stderr


_HELP_CACHE: dict[tuple[str, ...], str] = {}


def _options_known(command: Command) -> list[str]:
    """The options ``command`` names that its command's --help does not list."""
    unknown = []
    for words in _genrm_words(command.text):
        head = words[0]
        path = (head, words[1]) if head in {"data", "audit", "captions", "pairs", "train"} and len(words) > 1 else (
            head,)  # fmt: skip
        if path not in _HELP_CACHE:
            _HELP_CACHE[path] = _help(path)
        listed = _HELP_CACHE[path]
        if path in _RECIPE_COMMANDS:
            listed += " --config --field"  # TRL's parser reads --config itself; --field stands for any field
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9_-]*)", " ".join(words)):
            spellings = {option, option.replace("-", "_").replace("__", "--", 1)}
            if not any(re.search(re.escape(s) + r"(?![\w-])", listed) for s in spellings):
                unknown.append(f"{' '.join(path)} {option}")
    return unknown


def test_every_command_the_docs_show_is_run_or_says_why_not():
    assert len(COMMANDS) > 60  # the extraction found the pages' commands
    unclassified = [str(c) for c in COMMANDS if _reason(c) is None and not _is_synopsis(c) and not _runnable(c)]
    assert not unclassified, "add them to the run, or to NOT_RUN with a reason:\n" + "\n".join(unclassified)


def _runnable(command: Command) -> bool:
    return command.text.startswith(("genrm ", "curl "))


@pytest.mark.parametrize("page", sorted({c.page for c in COMMANDS}))
def test_every_option_the_docs_name_is_one_the_command_takes(page):
    shown = [c for c in COMMANDS if c.page == page and c.text.split()[0] not in ("curl", "pip", "python3")]
    unknown = [f"{c}: {u}" for c in shown for u in _options_known(c)]
    assert not unknown, "\n".join(unknown)


@pytest.fixture
def scratch(tmp_path):
    folder = tmp_path
    for name in ("datasets", "recipes"):
        (folder / name).symlink_to(ROOT / name)
    return folder


def _environment() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)}


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted({c.page for c in COMMANDS if _reason(c) is None and not _is_synopsis(c)}))
def test_the_commands_the_docs_show_run(page, scratch):
    commands = [c for c in COMMANDS if c.page == page and _reason(c) is None and not _is_synopsis(c)]
    server, server_block = None, None
    try:
        for command in commands:
            if server is not None and command.block != server_block:
                server.__exit__()
                server = None
            if command.text.startswith("genrm serve"):
                words = [*shlex.split(command.text)[2:], "--log-level", "warning"]
                server = ServeProcess(*words, cwd=scratch, env=_environment()).__enter__()
                server_block = command.block
                continue
            text = command.text
            if text.startswith("curl"):
                assert server is not None, f"{command}: no server started before it"
                text = text.replace("http://127.0.0.1:8000", server.url)
            done = subprocess.run(["bash", "-c", text], cwd=scratch, capture_output=True, text=True, timeout=600,
                                  env=_environment())  # fmt: skip
            assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            if text.startswith("curl"):
                reply = json.loads(done.stdout)
                assert "detail" not in reply, f"{command}: {reply}"
    finally:
        if server is not None:
            server.__exit__()
