"""A judge backed by a local generator: scoring prompts in, checked judgements out.

:class:`ModelJudge` implements :class:`genrm.judge.Judge` over any function that answers a batch of
:class:`genrm.hf_generation.GenerationItem` (a :class:`~genrm.hf_generation.LocalGenerator`, or a
:class:`~genrm.batching.BatchingGenerator` in front of one when many threads judge at once). It builds the group's
prompts with the same builders every backend uses, asks for all G answers in one call, parses each against the
rubric, and asks again, sampling, for answers that could not be read (``not_json`` or ``schema``): a greedy decoder
would only repeat itself. A prompt the generator could not answer becomes a ``backend_error`` judgement with the
generator's reason; nothing is ever turned into a credit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from genrm.hf_generation import Generation, GenerationItem
from genrm.judge import GroupRequest
from genrm.judge_output import ParsedJudgement, parse_judge_output
from genrm.output_schema import scoring_json_schema
from genrm.prompts import build_group_prompts

_UNREADABLE = ("not_json", "schema")


class ModelJudge:
    """Judges groups with a generator of judge answers (see the module docstring)."""

    def __init__(
        self,
        generate: Callable[[Sequence[GenerationItem]], list[Generation]],
        constrained: bool = True,
        temperature: float = 0.0,
        parse_retries: int = 1,
        retry_temperature: float = 0.7,
        name: str = "transformers",
        sees_images: bool = False,
    ) -> None:
        """Configure the judge.

        Args:
            generate: answers a batch of items of one temperature, in order.
            constrained: attach the rubric's JSON schema to each item (the generator constrains to it if it can).
            temperature: sampling temperature of first answers (0: greedy).
            parse_retries: new samples for an answer that could not be read (>= 0).
            retry_temperature: temperature of those new samples when ``temperature`` is 0.
            name: the backend's name in records and logs.
            sees_images: whether the generator shows a prompt's image to the model (a vision-language judge).
        """
        if parse_retries < 0:
            raise ValueError("parse_retries must be >= 0")
        self._generate, self.constrained, self.name, self.sees_images = generate, constrained, name, sees_images
        self.temperature, self.parse_retries = temperature, parse_retries
        self.retry_temperature = temperature if temperature > 0 else retry_temperature
        self.usage_callback: Callable[[int, int], None] | None = None

    @classmethod
    def from_pretrained(
        cls,
        path: str,
        device: str = "auto",
        max_tokens: int = 1024,
        constrained: bool = True,
        parse_retries: int = 1,
        image_dir: str | None = None,
    ) -> ModelJudge:
        """A judge on a checkpoint loaded in this process (:class:`genrm.hf_generation.LocalGenerator`), unbatched;
        a vision-language checkpoint is shown the images (data URIs, or files under ``image_dir``).

        Raises OSError or ValueError when the checkpoint cannot be loaded or has no chat template.
        """
        from genrm.hf_generation import LocalGenerator
        from genrm.judge import SamplingSettings

        generator = LocalGenerator.from_pretrained(
            path, device=device, sampling=SamplingSettings(max_tokens=max_tokens), constrained=constrained,
            image_dir=image_dir,
        )  # type: ignore[arg-type]  # fmt: skip
        return cls(generator.generate, constrained, parse_retries=parse_retries, sees_images=generator.sees_images)

    def _answers(self, items: list[GenerationItem]) -> list[Generation]:
        answers = self._generate(items)
        if self.usage_callback is not None:
            for answer in answers:
                if answer.error is None:
                    self.usage_callback(answer.prompt_tokens, answer.completion_tokens)
        return answers

    def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One judgement per response of ``request``, in order; never raises on a response or an answer."""
        schema = scoring_json_schema(request.plans) if self.constrained else None
        prompts = build_group_prompts(
            request.prompt, request.plans, request.responses, request.exposure, request.image
        )
        results: list[ParsedJudgement | None] = [None] * len(prompts)
        todo, temperature = list(range(len(prompts))), self.temperature
        for _ in range(self.parse_retries + 1):
            answers = self._answers([GenerationItem(prompts[i], schema, temperature) for i in todo])
            again = []
            for index, answer in zip(todo, answers, strict=True):
                if answer.error is not None:
                    results[index] = ParsedJudgement("backend_error", answer.error)
                    continue
                parsed = parse_judge_output(answer.text, request.plans)
                if parsed.failure in _UNREADABLE:
                    again.append(index)
                    if not answer.finished:
                        parsed = ParsedJudgement(parsed.failure, f"{parsed.reason} (the answer hit the token budget)")
                results[index] = parsed
            todo, temperature = again, self.retry_temperature
            if not todo:
                break
        return [r if r is not None else ParsedJudgement("backend_error", "no answer") for r in results]
