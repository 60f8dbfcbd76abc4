"""The import graph of the packages: dependencies point one way (verifiers <- genrm <- serving, policy_rl), and no
two modules import each other, directly or through others (imports inside functions count: they are circles
hidden, not removed)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("verifiers", "genrm", "serving", "policy_rl")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            found.update(t for t in targets if t in modules and t != name)
        graph[name] = found
    return graph


def _circles(graph: dict[str, set[str]], within: str) -> list[list[str]]:
    """Every import circle among the modules under ``within`` (Tarjan's strongly connected components)."""
    nodes = [n for n in graph if n == within or n.startswith(within + ".")]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in nodes:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in nodes:
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", ["genrm", "serving", "verifiers", "policy_rl"])
def test_no_two_modules_import_each_other(package):
    assert _circles(_graph(), package) == []


def test_dependencies_point_one_way():
    graph = _graph()
    below = {"verifiers": set(), "genrm": {"verifiers"}, "serving": {"verifiers", "genrm"},
             "policy_rl": {"verifiers", "genrm", "serving"}}  # fmt: skip
    wrong = sorted(f"{source} -> {target}" for source, targets in graph.items() for target in targets
                   if target.split(".")[0] not in below[source.split(".")[0]] | {source.split(".")[0]})  # fmt: skip
    assert wrong == []


#: The modules of a method that are stages themselves, kept with the method they drive: its own commands (a
#: ``genrm.commands`` plug-in) and its own judge training loop. They may use the stages' shared helpers; nothing
#: else of a method imports them or the stages.
METHOD_STAGES = ("commands", "grpo")


def test_methods_import_nothing_of_the_stages_that_drive_them():
    graph = _graph()
    stages = tuple(f"genrm.{stage}" for stage in ("data", "training", "evaluation", "cli"))
    own_stages = {name for name in graph if name.startswith("genrm.methods.") and name.rsplit(".", 1)[1] in
                  METHOD_STAGES}  # fmt: skip
    assert own_stages  # the names above are modules
    upward = {(source, target) for source, targets in graph.items()
              if source.startswith("genrm.methods") and source not in own_stages
              for target in targets if target.startswith(stages) or target in own_stages}  # fmt: skip
    assert upward == set()
