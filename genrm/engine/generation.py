"""Batched generation of judge answers in process with transformers, constrained to the rubric's JSON schema.

:class:`LocalGenerator` applies the model's chat template to each prompt, left-pads a batch, and runs one
``model.generate`` for it. Where XGrammar is installed (the ``train`` extra brings it; it is also SGLang's default
grammar backend, so a judge is constrained by the same engine in process and behind SGLang), each row of the batch
gets a token mask compiled from its own schema (``xgrammar.contrib.hf.LogitsProcessor``), so groups with different
rubrics share a batch. Grammars are compiled once per schema (XGrammar's compiler caches them) and in compact form
(no free whitespace, which a weak model would otherwise fill until the token budget runs out). The tokens every
prompt of a batch starts with (the system message; for one group, all but the response) are run through the model
once and their KV cache repeated for each row, which on CPU makes a group about 2.8 times faster with the same output.

A vision-language checkpoint (one whose config has a ``vision_config``: Qwen3-VL, LLaVA ...) is loaded with its
processor, and prompts with an image (the ``vlm`` exposure) are shown it the way training showed it: an image part
before the user's text in the chat template, pixels from the processor. Images are data URIs, or files inside an
``image_dir`` the owner names; a request cannot make the judge read any other file.

Failures are per prompt and never raise out of :meth:`LocalGenerator.generate`: a prompt too long for the model, an
image for a text-only model or one that cannot be read, a schema XGrammar cannot compile or a failed ``generate`` call
come back as a :class:`genrm.engine.types.Reply` with ``error`` set. :meth:`LocalGenerator.open_loop` gives the
continuous decode loop of :mod:`genrm.engine.decoding` over the same preparation (concurrent text prompts: rows leave
as they end and join as they arrive). :class:`genrm.engine.local.LocalEngine` puts dynamic batching in front of both
and makes it an engine.

Needs torch and transformers; imported only where a local model runs.
"""

from __future__ import annotations

import copy
import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genrm.choices import Device, Dtype
from genrm.engine.answer_grammar import answer_ebnf
from genrm.engine.checkpoints import checkpoint_path
from genrm.engine.decoding import (
    MIN_SHARED_TOKENS,
    DecodeLoop,
    cache_keyword,
    common_prefix_length,
    supports_model,
)
from genrm.engine.types import ChatPrompt, ChatRequest, Reply, SamplingSettings

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)


_KEPT_PREFIXES = 8
# What a processor returns besides the tokens: pixels and their layout (image sizes, grids), batched by row.
_TEXT_KEYS = frozenset({"input_ids", "attention_mask"})


@dataclass(frozen=True)
class _Prepared:
    """One prompt ready for a batch: its tokens, its grammar, and for an image prompt the processor's other tensors."""

    ids: list[int]
    grammar: Any = None
    vision: dict[str, Any] | None = None


def pick_device(device: Device) -> str:
    """``cuda`` when asked for or when ``auto`` finds a CUDA device, else ``cpu``."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda was asked for, but torch sees no CUDA device")
    return device


def pick_dtype(dtype: Dtype, device: str) -> torch.dtype:
    """The torch dtype for ``dtype``; ``auto`` is bfloat16 on CUDA and float32 on CPU."""
    import torch

    if dtype == "auto":
        # bf16 halves a GPU's memory traffic, which bounds decoding, and keeps fp32's range (no overflow in attention
        # logits, unlike fp16); a CPU without bf16 units emulates it, several times slower than fp32
        return torch.bfloat16 if device == "cuda" else torch.float32
    return getattr(torch, dtype)


#: The most memory the compiled grammars kept for reuse may take (XGrammar's cache drops the least recent beyond).
GRAMMAR_CACHE_BYTES = 256 * 2**20


@dataclass
class _Grammars:
    """XGrammar's compiler for one tokenizer; None where XGrammar is not installed."""

    compiler: Any
    lock: threading.Lock = field(default_factory=threading.Lock)

    def compile(self, schema: dict[str, Any]) -> Any:
        with self.lock:
            return self.compiler.compile_grammar(answer_ebnf(schema, portable=False))


def _grammar_compiler(tokenizer: PreTrainedTokenizerBase, vocab_size: int) -> _Grammars | None:
    try:
        import xgrammar
    except ImportError:
        return None
    info = xgrammar.TokenizerInfo.from_huggingface(
        tokenizer, vocab_size=vocab_size, stop_token_ids=[int(tokenizer.eos_token_id)]
    )
    # Bounded: every rubric has its own grammar, and a server runs for days.
    return _Grammars(xgrammar.GrammarCompiler(info, max_threads=2, cache_limit_bytes=GRAMMAR_CACHE_BYTES))


class LocalGenerator:
    """A causal LM and its tokenizer, generating judge answers for batches of prompts (one batch at a time)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        sampling: SamplingSettings | None = None,
        constrained: bool = True,
        chat_template_kwargs: dict[str, Any] | None = None,
        name: str = "local",
        prefix_cache: bool = True,
        processor: Any = None,
        image_dir: str | Path | None = None,
        continuous: bool = True,
        image_budget: int | None = None,
    ) -> None:
        """Wrap a loaded model.

        Args:
            model: a causal LM in eval mode, on its device.
            tokenizer: its tokenizer, with a chat template and an end-of-sequence token.
            sampling: token budget, temperature and top-p (a :class:`ChatRequest` may set its own temperature).
            constrained: constrain answers to their schema when XGrammar is installed (a warning says when it is not).
            chat_template_kwargs: extra variables for the chat template, e.g. ``{"enable_thinking": False}``.
            name: the model's name in logs and health reports.
            prefix_cache: compute the tokens every prompt of a batch starts with once, not once per row.
            processor: a vision-language model's processor (with an image processor); without one, prompts with an
                image are refused.
            image_dir: the folder image paths are read from (relative to it, never outside it); None reads data URIs
                only.
            continuous: decode concurrent text prompts in one loop that rows leave as they end and join as they
                arrive (:mod:`genrm.engine.decoding`), where the model's cache allows it; else ``model.generate``
                per batch.
            image_budget: most pixels of an image the model is shown; a larger one is scaled down to it before the
                processor sees it (None: as it is; the processor may still resize it by its own settings).
        """
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no end-of-sequence token; the judge could not stop")
        if tokenizer.chat_template is None:
            raise ValueError("the tokenizer has no chat template; the judge's prompts are conversations")
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.sampling = sampling or SamplingSettings()
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        tokenizer.padding_side = "left"  # decoder-only batches: every answer starts right after its prompt
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.max_positions = int(getattr(model.config.get_text_config(), "max_position_embeddings", 0) or 0)
        self.grammars = _grammar_compiler(tokenizer, self.vocab_size) if constrained else None
        self.prefix_cache = prefix_cache
        self.processor = processor if getattr(processor, "image_processor", None) is not None else None
        self.image_dir = Path(image_dir) if image_dir is not None else None
        self.image_budget = image_budget
        self._prefixes: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self.continuous = continuous and supports_model(model)
        if constrained and self.grammars is None:
            logger.warning("xgrammar is not installed: judge answers are not constrained to the rubric's schema")

    @classmethod
    def from_pretrained(
        cls,
        path: str,
        device: Device = "auto",
        dtype: Dtype = "auto",
        trust_remote_code: bool = False,
        **kwargs: Any,
    ) -> LocalGenerator:
        """Load a checkpoint (directory or hub id) and its tokenizer, or for a vision-language checkpoint its
        processor; ``kwargs`` go to the constructor."""
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoProcessor,
            AutoTokenizer,
        )

        path = checkpoint_path(path)
        where = pick_device(device)
        options = {"trust_remote_code": trust_remote_code}
        if getattr(AutoConfig.from_pretrained(path, **options), "vision_config", None) is not None:
            processor = AutoProcessor.from_pretrained(path, **options)
            tokenizer, kind = processor.tokenizer, AutoModelForImageTextToText
            kwargs.setdefault("processor", processor)
        else:
            tokenizer, kind = AutoTokenizer.from_pretrained(path, **options), AutoModelForCausalLM
        model = kind.from_pretrained(path, dtype=pick_dtype(dtype, where), **options)
        logger.info("loaded judge %s on %s (%.1f M parameters)", path, where, model.num_parameters() / 1e6)
        return cls(model.to(where).eval(), tokenizer, name=kwargs.pop("name", path), **kwargs)

    @property
    def constrained(self) -> bool:
        """Whether answers are constrained to their schema."""
        return self.grammars is not None

    @property
    def device(self) -> str:
        """The model's device, e.g. ``cpu`` or ``cuda:0``."""
        return str(self.model.device)

    @property
    def sees_images(self) -> bool:
        """Whether the judge is a vision-language model that is shown the images of ``vlm`` prompts."""
        return self.processor is not None

    def _template(self, prompt: ChatPrompt) -> str:
        # image parts as placeholders, the layout TRL's vision collators train on; the processor gets the images
        templater = self.processor or self.tokenizer
        return templater.apply_chat_template(
            prompt.messages(image_placeholders=True), add_generation_prompt=True, tokenize=False,
            **self.chat_template_kwargs,
        )  # fmt: skip

    def _encode(self, prompt: ChatPrompt) -> tuple[list[int], dict[str, Any] | None] | str:
        """The prompt's tokens, and for a prompt with images the processor's pixel tensors; or why it cannot be
        shown."""
        if not prompt.images:
            return self.tokenizer(self._template(prompt), add_special_tokens=False).input_ids, None
        if self.processor is None:
            return (
                f"{self.name} is a text-only judge (its checkpoint has no image processor); "
                "the vlm exposure needs a vision-language model"
            )
        from genrm.engine.images import ImageError

        try:
            images = [_decoded_image(reference, self.image_dir, self.image_budget) for reference in prompt.images]
        except ImageError as exc:
            return f"the image cannot be shown to the judge: {exc}"
        text = self._template(prompt)
        encoded = self.processor(images=images, text=[text], add_special_tokens=False, return_tensors="pt")
        vision = {key: value for key, value in encoded.items() if key not in _TEXT_KEYS}
        return encoded["input_ids"][0].tolist(), vision

    def _prepare(self, item: ChatRequest) -> _Prepared | str:
        encoded = self._encode(item.prompt)
        if isinstance(encoded, str):
            return encoded
        ids, vision = encoded
        if self.max_positions and len(ids) + self.sampling.max_tokens > self.max_positions:
            return (
                f"the prompt is {len(ids)} tokens; with {self.sampling.max_tokens} output tokens it exceeds the "
                f"model's {self.max_positions} positions"
            )
        grammar = None
        if self.grammars is not None and item.schema is not None:
            try:
                grammar = self.grammars.compile(item.schema)
            except Exception as exc:  # XGrammar raises RuntimeError/ValueError subclasses of its own
                return f"xgrammar could not compile the answer schema: {exc}"
        return _Prepared(ids, grammar, vision)

    def _prepared(self, item: ChatRequest) -> _Prepared | str:
        """:meth:`_prepare`, with any exception turned into that item's reason (never its batch's or loop's)."""
        try:
            return self._prepare(item)
        except Exception as exc:  # noqa: BLE001
            logger.exception("could not prepare a judge prompt")
            return f"the prompt could not be prepared: {type(exc).__name__}: {str(exc)[:200]}"

    def temperature(self, request: ChatRequest) -> float:
        """The temperature ``request`` is sampled at: its own, else the generator's."""
        return self.sampling.temperature if request.temperature is None else request.temperature

    def generate(self, items: Sequence[ChatRequest]) -> list[Reply]:
        """Answers for ``items``, in order. Items of one call are one batch and must share a temperature."""
        if not items:
            return []
        if len({self.temperature(item) for item in items}) > 1:
            raise ValueError("one batch takes one temperature; group items by temperature first")
        results: list[Reply | None] = [None] * len(items)
        ready: list[tuple[int, _Prepared]] = []
        for index, item in enumerate(items):
            prepared = self._prepared(item)
            if isinstance(prepared, str):
                results[index] = Reply(error=prepared)
            else:
                ready.append((index, prepared))
        if ready:
            try:
                generated = self._generate_batch([prepared for _, prepared in ready], items[0])
            except Exception as exc:  # an out-of-memory or a library error fails this batch, not the process
                logger.exception("judge generation failed for a batch of %d", len(ready))
                generated = [Reply.failed(exc)] * len(ready)
            for (index, _), generation in zip(ready, generated, strict=True):
                results[index] = generation
        return [r if r is not None else Reply(error="not generated") for r in results]

    def _generate_batch(self, rows: list[_Prepared], item: ChatRequest) -> list[Reply]:
        import torch
        from transformers import LogitsProcessorList

        prompts, grammars = [row.ids for row in rows], [row.grammar for row in rows]
        if any(row.vision is not None for row in rows):
            batch = self._vision_inputs(rows)
        else:
            batch = self._batch_inputs(prompts)
        processors = LogitsProcessorList()
        if any(g is not None for g in grammars):
            if not all(g is not None for g in grammars):
                raise ValueError("a batch is either all constrained or all free")
            from xgrammar.contrib.hf import LogitsProcessor

            processors.append(LogitsProcessor(list(grammars)))
        temperature = self.temperature(item)
        options: dict[str, Any] = {"do_sample": temperature > 0}
        if temperature > 0:
            options.update(temperature=temperature, top_p=self.sampling.top_p, top_k=0)
            if self.sampling.seed is not None:
                torch.manual_seed(self.sampling.seed)
        else:
            options.update(temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            output = self.model.generate(
                **batch, max_new_tokens=self.sampling.max_tokens, logits_processor=processors,
                eos_token_id=self.tokenizer.eos_token_id, pad_token_id=self.tokenizer.pad_token_id, **options,
            )  # fmt: skip
        new_tokens = output[:, batch["input_ids"].shape[1] :].tolist()
        return [self._decoded(len(prompt), row) for prompt, row in zip(prompts, new_tokens, strict=True)]

    def _batch_inputs(self, prompts: list[list[int]]) -> dict[str, Any]:
        """Left-padded inputs, with the KV cache of the batch's common prefix when it is worth computing once.

        Every scoring prompt starts with the same system message, and the G prompts of a group share all but the
        response, so the common prefix is most of each prompt. Its cache is computed for one row and repeated; the
        rows are laid out as prefix, padding, own suffix, and the attention mask hides the padding (positions come
        from the mask, so each suffix continues right after the prefix).
        """
        import torch

        shared = common_prefix_length(prompts) if self.prefix_cache and len(prompts) > 0 else 0
        if shared < MIN_SHARED_TOKENS:
            padded = self.tokenizer.pad({"input_ids": prompts}, padding=True, return_tensors="pt")
            return dict(padded.to(self.model.device))
        prefix, suffixes = prompts[0][:shared], [prompt[shared:] for prompt in prompts]
        width, pad = max(map(len, suffixes)), int(self.tokenizer.pad_token_id)
        ids = [prefix + [pad] * (width - len(tail)) + tail for tail in suffixes]
        mask = [[1] * shared + [0] * (width - len(tail)) + [1] * len(tail) for tail in suffixes]
        cache = self._prefix_kv(tuple(prefix))
        cache.batch_repeat_interleave(len(prompts))
        device = self.model.device
        return {
            "input_ids": torch.tensor(ids, device=device),
            "attention_mask": torch.tensor(mask, device=device),
            cache_keyword(self.model): cache,
        }

    def _vision_inputs(self, rows: list[_Prepared]) -> dict[str, Any]:
        """Left-padded inputs of a batch with images: each row's pixel tensors joined along the first dimension in
        row order (a row's images in its order, as the model expects them); tensors laid along the tokens, which some
        processors add, are padded like the tokens. No prefix cache: the image's tokens sit inside the prompt."""
        import torch

        width, pad = max(len(row.ids) for row in rows), int(self.tokenizer.pad_token_id)
        device = self.model.device
        batch: dict[str, Any] = {
            "input_ids": torch.tensor([[pad] * (width - len(row.ids)) + row.ids for row in rows], device=device),
            "attention_mask": torch.tensor([[0] * (width - len(row.ids)) + [1] * len(row.ids) for row in rows],
                                           device=device),
        }  # fmt: skip
        for key in sorted({key for row in rows if row.vision for key in row.vision}):
            values = [(row, (row.vision or {}).get(key)) for row in rows]
            if any(v is not None and v.dim() == 2 and v.shape[1] == len(r.ids) for r, v in values):
                parts = [
                    torch.nn.functional.pad(v, (width - len(r.ids), 0)) if v is not None
                    else torch.zeros((1, width), dtype=torch.long) for r, v in values
                ]  # fmt: skip
            else:
                parts = [v for _, v in values if v is not None]
            batch[key] = torch.cat(parts).to(device)
        return batch

    def _prefix_kv(self, prefix: tuple[int, ...]) -> Any:
        """A fresh copy of the one-row KV cache of ``prefix`` (the last few prefixes are kept).

        A new prefix starts from the kept one it shares most with (every scoring prompt starts with the same system
        message, so a new group computes only its rubric and prompt), cut to what they share."""
        import torch
        from transformers import DynamicCache

        if prefix not in self._prefixes:
            base, shared = None, 0
            for kept, kept_cache in self._prefixes.items():
                common = common_prefix_length([kept, prefix])
                if common > shared:
                    base, shared = kept_cache, common
            if base is not None and shared >= MIN_SHARED_TOKENS:
                cache = copy.deepcopy(base)
                for layer in cache.layers:
                    layer.keys, layer.values = layer.keys[..., :shared, :], layer.values[..., :shared, :]
            else:
                cache, shared = DynamicCache(config=self.model.config), 0
            with torch.inference_mode():
                self.model(input_ids=torch.tensor([prefix[shared:]], device=self.model.device),
                           **{cache_keyword(self.model): cache})  # fmt: skip
            self._prefixes[prefix] = cache
            while len(self._prefixes) > _KEPT_PREFIXES:
                self._prefixes.popitem(last=False)
        self._prefixes.move_to_end(prefix)
        return copy.deepcopy(self._prefixes[prefix])

    def _decoded(self, prompt_tokens: int, row: list[int]) -> Reply:
        eos = self.tokenizer.eos_token_id
        finished = eos in row
        tokens = row[: row.index(eos)] if finished else row
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        return Reply(text, prompt_tokens, len(tokens) + int(finished), finished)

    def open_loop(self, temperature: float) -> AnswerLoop:
        """An empty continuous decode loop at ``temperature`` (see :class:`AnswerLoop`); only when
        :attr:`continuous`."""
        if not self.continuous:
            raise RuntimeError(f"{self.name} decodes with model.generate only (its cache layers are not all plain)")
        if temperature > 0 and self.sampling.seed is not None:
            import torch

            torch.manual_seed(self.sampling.seed)
        loop = DecodeLoop(self.model, self._batch_inputs, int(self.tokenizer.eos_token_id), self.sampling.max_tokens,
                          temperature, self.sampling.top_p)  # fmt: skip
        return AnswerLoop(self, loop)


class AnswerLoop:
    """A :class:`genrm.engine.decoding.DecodeLoop` fed with :class:`ChatRequest` s under caller keys: each request is
    prepared as for a batch (template, tokens, grammar; a failure is that request's reply at once), text requests join
    the loop, requests with an image are handed back for ``generate``. Not thread-safe: one thread joins and steps."""

    def __init__(self, generator: LocalGenerator, loop: DecodeLoop) -> None:
        self._generator, self._loop = generator, loop

    @property
    def active(self) -> int:
        """Requests decoding now."""
        return self._loop.active

    def join(self, entries: Sequence[tuple[Any, ChatRequest]]) -> tuple[list[tuple[Any, Reply]], list[Any]]:
        """Admit ``(key, request)`` pairs. Returns the replies of those that could not join (a prompt too long, a
        schema XGrammar cannot compile, a failed prefill) and the keys of those with an image, for ``generate``."""
        replies: list[tuple[Any, Reply]] = []
        refused: list[Any] = []
        rows: list[tuple[Any, list[int], Any]] = []
        for key, item in entries:
            if item.prompt.images:
                refused.append(key)
                continue
            prepared = self._generator._prepared(item)
            if isinstance(prepared, str):
                replies.append((key, Reply(error=prepared)))
            else:
                rows.append((key, prepared.ids, prepared.grammar))
        try:
            self._loop.admit(rows)
        except Exception as exc:  # an out-of-memory or a library error fails these rows, not the loop's others
            logger.exception("judge prefill failed for %d prompts", len(rows))
            replies += [(key, Reply.failed(exc)) for key, _, _ in rows]
        return replies, refused

    def step(self) -> list[tuple[Any, Reply]]:
        """Decode one token for every request; the replies of those that ended. Raises what the model raises."""
        return [(done.key, self._generator._decoded(done.prompt_tokens, done.tokens)) for done in self._loop.step()]


@functools.lru_cache(maxsize=8)
def _decoded_image(reference: str, image_dir: Path | None, budget: int | None) -> Any:
    # The G prompts of a group share their image references (the same string objects): decode each once, not G
    # times. Eight entries: a pairwise prompt shows up to a few images (the prompt's and each response's), for a
    # group being prepared and the next one; an 8192 x 8192 image takes 200 MB decoded, under the default budget 3.
    from genrm.engine.images import load_sent_image

    return load_sent_image(reference, image_dir, budget)
