"""Extract Math-Verify's own test cases into ``benchmarks/data/math_verify_cases.jsonl``.

    python benchmarks/math_verify_cases.py PATH/TO/Math-Verify [-o benchmarks/data/math_verify_cases.jsonl]

Reads the ``pytest.mark.parametrize`` tables of Math-Verify's ``tests/`` (literals only, never run) and writes one line
per case: where it comes from, the gold answer, the prediction, the expected verdict, and the options its test passes
(``precision``, ``strict``, ``allow_set_relation_comp``: a case is scored against its expectation under whatever call
the benchmark makes, so those options say why a default call may disagree). String-extraction cases (an option letter
in a sentence) become a gold letter and an expected 1; a case whose table cannot be read as literals is left out.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
from pathlib import Path

_FILES = ("test_all.py", "test_boxed.py", "test_numina_cases.py", "test_open_thoughts.py", "test_strict.py",
          "test_yujianll.py", "test_string_extraction.py")  # fmt: skip
_OPTIONS = ("precision", "strict", "allow_set_relation_comp")


def _tables(source: str):
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "parametrize":
                names = ast.literal_eval(decorator.args[0])
                names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
                table = decorator.args[1]
                if not isinstance(table, ast.List):
                    continue
                rows = [row.elts for row in table.elts if isinstance(row, ast.Tuple) and len(row.elts) == len(names)]
                yield node.name, [dict(zip(names, map(_literal, row), strict=True)) for row in rows]


def _literal(node: ast.expr):
    # A cell built by code (an f-string, a config object) is left as None: the cases that need it are dropped.
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _case(where: str, row: dict) -> dict | None:
    if isinstance(row.get("gold"), str) and isinstance(row.get("pred"), str):
        expected = row.get("expected", row.get("result"))
        if expected not in (0, 1, True, False):
            return None
        options = {k: row[k] for k in _OPTIONS if k in row}
        return {"source": where, "gold": row["gold"], "pred": row["pred"], "expected": int(expected),
                "options": options}  # fmt: skip
    if isinstance(row.get("pred"), str) and isinstance(row.get("expected"), list) and len(row["expected"]) == 2:
        return {"source": where, "gold": row["expected"][1], "pred": row["pred"], "expected": 1,
                "options": {"string_extraction": True}}  # fmt: skip
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path, help="a checkout of github.com/huggingface/Math-Verify")
    parser.add_argument("-o", "--output", type=Path,
                        default=Path(__file__).resolve().parent / "data" / "math_verify_cases.jsonl")  # fmt: skip
    args = parser.parse_args()
    cases = []
    for name in _FILES:
        for test, rows in _tables((args.repo / "tests" / name).read_text(encoding="utf-8")):
            cases += [c for row in rows if (c := _case(f"tests/{name}::{test}", row)) is not None]
    commit = subprocess.run(["git", "-C", str(args.repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    with open(args.output, "w", encoding="utf-8") as out:
        for case in cases:
            out.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases from Math-Verify {commit.stdout.strip() or '(commit unknown)'} to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
