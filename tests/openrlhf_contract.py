"""OpenRLHF's own rollout executor asking our reward server for every sample's reward; prints the rewards as JSON.

    PYTHONPATH=<dir with openrlhf installed> python tests/openrlhf_contract.py URL INSTANCES_JSONL

For each instance, each of its responses is one rollout sample, all in flight at once as OpenRLHF's vLLM engine
actors run them: ``SingleTurnAgentExecutor.execute`` (``openrlhf.utils.agent``, the code OpenRLHF runs for
``--remote_rm_url``) tokenizes the chat-formatted prompt, takes the "generated" tokens (a scripted engine stands in
for vLLM: the response's tokens and the end-of-sequence token, as a chat model ends its turn), decodes prompt and
response with special tokens kept, and posts it with the prompt and the label (the instance as JSON) to ``URL``.
OpenRLHF is installed without its dependencies: this module needs torch, transformers, sympy, pylatexenc, aiohttp.
"""

import asyncio
import json
import sys
from types import SimpleNamespace

from openrlhf.utils.agent import SingleTurnAgentExecutor

from genrm.methods.rubric.models import Instance
from genrm.training.tiny_model import build_tokenizer


class ScriptedEngine:
    """vLLM's ``generate`` as the executor calls it, answering each prompt with its scripted response's tokens."""

    def __init__(self, tokenizer, answers: dict[tuple[int, ...], list[list[int]]]) -> None:
        self.tokenizer, self.answers = tokenizer, answers

    async def generate(self, prompt_token_ids, sampling_params, **_):
        tokens = self.answers[tuple(prompt_token_ids)].pop(0) + [self.tokenizer.eos_token_id]
        output = SimpleNamespace(token_ids=tokens, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


async def main() -> None:
    url, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as handle:
        instances = [Instance.model_validate_json(line) for line in handle if line.strip()]
    texts = [text for instance in instances for text in [instance.prompt, *instance.responses]]
    tokenizer = build_tokenizer(texts, vocab_size=400)
    prompts = [tokenizer.apply_chat_template([{"role": "user", "content": i.prompt}], tokenize=False,
                                             add_generation_prompt=True) for i in instances]  # fmt: skip
    answers: dict[tuple[int, ...], list[list[int]]] = {}
    for prompt, instance in zip(prompts, instances, strict=True):
        key = tuple(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        encoded = [tokenizer(r, add_special_tokens=False)["input_ids"] for r in instance.responses]
        answers.setdefault(key, []).extend(encoded)
    engine = ScriptedEngine(tokenizer, answers)
    executor = SingleTurnAgentExecutor([url])
    params = SimpleNamespace(max_tokens=256, logprobs=None)
    samples = [(n, prompt, instance.model_dump_json(exclude={"responses"}))
               for n, (prompt, instance) in enumerate(zip(prompts, instances, strict=True))
               for _ in instance.responses]  # fmt: skip
    outputs = await asyncio.gather(*(executor.execute(prompt, label, params, 2048, tokenizer, engine)
                                     for _, prompt, label in samples))  # fmt: skip
    queries = [tokenizer.decode(o["observation_tokens"], skip_special_tokens=False) for o in outputs]
    print(json.dumps({
        "rewards": [[n, o["reward"]] for (n, _, _), o in zip(samples, outputs, strict=True)],
        "extra_logs": [o["extra_logs"] for o in outputs],
        "query_endings": sorted({q[-12:] for q in queries}),
    }))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
