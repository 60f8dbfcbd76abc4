"""Write the labelled real model answers of ``benchmarks/data/gsm8k_model_answers.jsonl``.

    python benchmarks/gsm8k_model_answers.py PATH/TO/grade-school-math [-o benchmarks/data/gsm8k_model_answers.jsonl]
        [--every 4]

Reads ``grade_school_math/data/example_model_solutions.jsonl`` of OpenAI's GSM8K repository (as committed; run it on
a clone): for each test question, four answers written by GPT-3 models (6B and 175B, fine-tuned alone or with a
verifier), each with the repository's own ``is_correct`` label. Every ``--every``-th question is kept (all four of its
answers), so the file stays small and the questions are spread over the whole test split. One line per answer: the
question's index in the test split, the model, the gold number (the ``A:`` line of the reference solution), the
answer as the model wrote it and its label.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

_SOURCE = "grade_school_math/data/example_model_solutions.jsonl"
_MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


def _gold(reference_solution: str) -> str:
    # The reference solution ends with "A: <number>", the form the labels were computed against.
    return reference_solution.rsplit("A:", 1)[1].strip()


def build(repo: Path, every: int) -> list[dict]:
    """The kept answers of the clone ``repo``: one dict per answer, questions ``0, every, 2*every, ...``."""
    rows = []
    lines = (repo / _SOURCE).read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        if index % every:
            continue
        item = json.loads(line)
        gold = _gold(item["ground_truth"])
        for model in _MODELS:
            answer = item[model]
            rows.append({"question": index, "model": model, "gold": gold, "response": answer["solution"],
                         "label": int(answer["is_correct"])})  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path, help="a clone of github.com/openai/grade-school-math")
    parser.add_argument("-o", "--output", type=Path, default=Path(__file__).parent / "data/gsm8k_model_answers.jsonl")
    parser.add_argument("--every", type=int, default=4, help="keep every N-th test question (default 4)")
    args = parser.parse_args()
    if not (args.repo / _SOURCE).is_file():
        parser.error(f"{args.repo}: no {_SOURCE} (give a clone of openai/grade-school-math)")
    if args.every < 1:
        parser.error("--every: must be at least 1")
    rows = build(args.repo, args.every)
    commit = subprocess.run(["git", "-C", str(args.repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    args.output.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    positives = sum(row["label"] for row in rows)
    print(f"wrote {len(rows)} answers ({positives} labelled correct) to {args.output}"
          f" from {commit.stdout.strip() or 'a copy without git'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
