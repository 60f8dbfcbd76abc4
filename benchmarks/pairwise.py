"""The pairwise judge's cost: judge calls and tokens per training sample with MJ1's swap in the loop, and per pair in
evaluation and as a policy reward.

    python benchmarks/pairwise.py [--group 32]

Per training sample the source draws G completions (32) and resumes each on the swapped pair from its reasoning, cut
before the evaluation: G more calls, each generating only the evaluation and the scores, after a prompt that carries
the swapped reasoning. The answers are the scripted colour judge's (:mod:`genrm.methods.pairwise.scene_judge`) on the
example pairs; tokens are those of a byte-level BPE made here from the method's own prompt and answers (no real
tokenizer can be downloaded), so the ratios are what carries over, and a real judge's reasoning is longer, which makes
the continuation's share smaller still.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from genrm.jsonl import read_jsonl_lines  # noqa: E402
from genrm.methods.pairwise.models import PairExample  # noqa: E402
from genrm.methods.pairwise.prompts import pair_request  # noqa: E402
from genrm.methods.pairwise.scene_judge import colour_judge  # noqa: E402
from genrm.methods.pairwise.swap import reasoning_prefix, swapped_prefix  # noqa: E402

PAIRS = _HERE.parent / "datasets" / "examples" / "pairs" / "pairs.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--group", type=int, default=32, help="completions per training sample (the source's 32)")
    args = parser.parse_args()
    from genrm.training.tiny_model import build_tokenizer

    pairs = [PairExample.model_validate_json(line) for line in read_jsonl_lines(PAIRS)]
    judge = functools.partial(colour_judge, base_dir=PAIRS.parent)
    requests = [pair_request(p) for p in pairs]
    answers = [judge(r) for r in requests]
    texts = [requests[0].prompt.system, *(r.prompt.user for r in requests), *answers]
    tokenizer = build_tokenizer(texts, vocab_size=1024)

    def count(text: str) -> float:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    n = len(pairs)
    prompt = sum(count(r.prompt.system + "\n" + r.prompt.user) for r in requests) / n
    answer = sum(count(a) for a in answers) / n
    prefix = sum(count(reasoning_prefix(a)) for a in answers) / n
    resumed_prompt = prompt + sum(count(swapped_prefix(a)) for a in answers) / n
    regenerated = answer - prefix
    g = args.group
    rows = [
        ("originals", g, g * prompt, g * answer),
        ("swapped continuations", g, g * resumed_prompt, g * regenerated),
    ]
    print(f"one training sample, G = {g}: {n} example pairs, answers of {answer:.0f} tokens, the reasoning kept for "
          f"the swap {prefix:.0f} of them\n")  # fmt: skip
    print(f"{'sequences':<24} {'calls':>6} {'prompt tokens':>14} {'generated tokens':>17}")
    for name, calls, prompt_tokens, generated in rows:
        print(f"{name:<24} {calls:>6} {prompt_tokens:>14,.0f} {generated:>17,.0f}")
    total_calls = sum(r[1] for r in rows)
    extra_generated = rows[1][3] / rows[0][3]
    print("\nevaluation (genrm pairs eval): 2 calls per pair; as a policy reward: 2 calls per response with the "
          "swap, 1 without")  # fmt: skip
    print(f"\nsummary: the swap doubles the group to {total_calls} sequences per training sample (x2 calls) but adds "
          f"only x{extra_generated:.2f} of the originals' generated tokens, since the continuation regenerates the "
          f"evaluation and the scores alone")  # fmt: skip


if __name__ == "__main__":
    main()
