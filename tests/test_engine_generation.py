"""Batched local generation with transformers and XGrammar, on the tiny judge (real model, real grammar)."""

import base64
import json
from pathlib import Path

import jsonschema
import pytest

from genrm.engine import ChatPrompt, ChatRequest, SamplingSettings
from genrm.engine.decoding import common_prefix_length
from genrm.engine.generation import LocalGenerator
from genrm.methods.rubric.answer_schema import scoring_json_schema
from genrm.methods.rubric.judge_data import read_examples
from genrm.methods.rubric.planning import plan_rubric
from genrm.methods.rubric.prompts import build_group_prompts, exposed_plans


@pytest.fixture(scope="module")
def generator(tiny_judge_dir):
    return LocalGenerator.from_pretrained(str(tiny_judge_dir), device="cpu", sampling=SamplingSettings(max_tokens=768))


def _items(instances, exposure="minimal"):
    items, schemas = [], []
    for instance in instances:
        plans = exposed_plans(plan_rubric(instance.rubric), exposure)
        schema = scoring_json_schema(plans)
        for prompt in build_group_prompts(instance.prompt, plans, list(instance.responses), exposure, None):
            items.append(ChatRequest(prompt, schema))
            schemas.append(schema)
    return items, schemas


def test_constrained_answers_follow_each_rows_schema(generator, example_instances):
    # one batch mixing rubrics of different verifiers and sections: every row has its own grammar
    picked = [example_instances[i] for i in (0, 7, 19, 33)]
    items, schemas = _items(picked)
    answers = generator.generate(items)
    assert generator.constrained
    xgrammar = pytest.importorskip("xgrammar")
    grammars = [generator.grammars.compile(schema) for schema in schemas]
    budget = generator.sampling.max_tokens
    for row, (answer, schema) in enumerate(zip(answers, schemas, strict=True)):
        assert answer.error is None and answer.prompt_tokens > 100
        if answer.finished:  # a whole answer of its own schema
            jsonschema.validate(json.loads(answer.text), schema)
            assert 0 < answer.completion_tokens <= budget
        else:  # the untrained model may loop inside a value until the budget: what it wrote is still its grammar's
            assert answer.completion_tokens == budget
        assert xgrammar.GrammarMatcher(grammars[row]).accept_string(answer.text)
        # ... and not another row's whose schema differs (each row is constrained by its own)
        others = [i for i, other in enumerate(schemas) if other != schema]
        assert others and not any(xgrammar.GrammarMatcher(grammars[i]).accept_string(answer.text) for i in others)


def _short_answers(items):
    # schemas that end the answer after a few characters, a different number per row, so rows end at different steps
    schemas = [{"type": "object", "properties": {"note": {"type": "string", "minLength": 2 + 7 * (i % 5),
                                                          "maxLength": 2 + 7 * (i % 5)}},
                "required": ["note"], "additionalProperties": False} for i in range(len(items))]  # fmt: skip
    return [ChatRequest(item.prompt, schema) for item, schema in zip(items, schemas, strict=True)]


def test_the_decode_loop_answers_as_generate_does_while_rows_leave_and_join(generator, example_instances):
    items, _ = _items(example_instances[:3])
    items = _short_answers(items)
    expected = generator.generate(items)
    assert generator.continuous and len({a.completion_tokens for a in expected}) > 2
    assert all(a.finished for a in expected)
    loop, answers, joined_at = generator.open_loop(0.0), {}, None
    assert loop.join(list(enumerate(items[:5]))) == ([], [])
    while loop.active:
        answers.update(loop.step())
        if answers and joined_at is None:  # the first rows have left: the others join a loop that is running
            joined_at = len(answers)
            assert loop.join(list(enumerate(items))[5:]) == ([], [])
    assert 0 < joined_at < 5
    assert [answers[i] for i in range(len(items))] == expected


def test_the_decode_loop_keeps_the_prefix_all_rows_share_once_as_groups_join(generator, example_instances):
    from genrm.engine.cascade import NAME

    items, _ = _items(example_instances[:3])
    items = _short_answers(items)
    expected = generator.generate(items)
    first = [i for i, item in enumerate(items) if item.prompt.shared_prefix == items[0].prompt.shared_prefix]
    loop, answers = generator.open_loop(0.0), {}
    assert generator.model.config._attn_implementation == NAME
    loop.join([(i, items[i]) for i in first])
    alone = len(loop._loop._shared_ids)  # one group: all but the responses
    answers.update(loop.step())
    loop.join([(i, item) for i, item in enumerate(items) if i not in first])
    together = len(loop._loop._shared_ids)  # three groups: the system message and what follows it alike
    assert 100 < together < alone
    # the two groups that joined keep what their rows share after that once each; the first group's rows took
    # their share back into their own caches when the prefix of all rows shrank
    groups = loop._loop._groups
    assert groups is not None and groups.layers[0][0].shape[0] == 3  # two groups and the rows of none
    assert groups.group.tolist().count(2) == len(first) and int(groups.valid[:2].sum(-1).min()) >= 32
    while loop.active:
        answers.update(loop.step())
    assert [answers[i] for i in range(len(items))] == expected
    assert not loop._loop._shared_ids  # an empty loop keeps nothing


def test_the_decode_loop_samples_within_the_grammar_and_top_p_keeps_the_most_likely(tiny_judge_dir, example_instances):
    items, _ = _items(example_instances[:1])
    items = _short_answers(items)

    def answers(temperature, top_p):
        sampling = SamplingSettings(max_tokens=64, temperature=temperature, top_p=top_p, seed=3)
        sampler = LocalGenerator.from_pretrained(str(tiny_judge_dir), device="cpu", sampling=sampling)
        loop, got = sampler.open_loop(temperature), {}
        loop.join(list(enumerate(items)))
        while loop.active:
            got.update(loop.step())
        return [got[i] for i in range(len(items))]

    greedy = answers(0.0, 1.0)
    # a nucleus this small holds only the most likely token: sampling it is greedy decoding
    assert answers(1.0, 1e-9) == greedy
    sampled = answers(1.5, 1.0)
    assert sampled != greedy  # a flat distribution at 1.5 over an untrained model's logits: not the argmax each time
    for answer, item in zip(sampled, items, strict=True):
        assert answer.finished
        jsonschema.validate(json.loads(answer.text), item.schema)


def test_a_row_answers_the_same_alone_and_in_a_batch(generator, example_instances):
    # left padding and the attention mask must keep a short prompt's answer independent of its batch mates
    items, _ = _items(example_instances[:3])
    batched = generator.generate(items)
    for index in (0, len(items) - 1):
        assert generator.generate([items[index]])[0].text == batched[index].text


def test_greedy_answers_are_reproducible(generator, example_instances):
    items, _ = _items(example_instances[:1])
    assert [a.text for a in generator.generate(items)] == [a.text for a in generator.generate(items)]


def test_unconstrained_generation_is_free_text(tiny_judge_dir, example_instances):
    free = LocalGenerator.from_pretrained(
        str(tiny_judge_dir), device="cpu", constrained=False, sampling=SamplingSettings(max_tokens=24)
    )
    items, _ = _items(example_instances[:1])
    answers = free.generate(items)
    assert not free.constrained
    assert all(a.error is None and a.completion_tokens <= 24 for a in answers)


def test_problems_are_per_prompt_errors(generator, example_instances):
    items, _ = _items(example_instances[:1])
    too_long = ChatRequest(ChatPrompt("system", "word " * 10_000))
    with_image = ChatRequest(ChatPrompt("system", "look", image="data:image/png;base64,AAAA"))
    bad_schema = ChatRequest(items[0].prompt, {"type": "string", "pattern": "(?<=lookbehind)x"})
    answers = generator.generate([items[0], too_long, with_image, bad_schema])
    assert answers[0].error is None
    assert "exceeds the model's" in answers[1].error
    assert "text-only judge" in answers[2].error
    assert "could not compile" in answers[3].error


def test_one_batch_takes_one_temperature(generator, example_instances):
    items, _ = _items(example_instances[:1])
    with pytest.raises(ValueError, match="one temperature"):
        generator.generate([items[0], ChatRequest(items[1].prompt, items[1].schema, temperature=0.7)])


def test_sampling_with_a_seed(tiny_judge_dir, example_instances):
    sampled = LocalGenerator.from_pretrained(
        str(tiny_judge_dir), device="cpu", sampling=SamplingSettings(max_tokens=2048, temperature=1.0, seed=3)
    )  # a budget above the schema's longest answer: a sampled untrained model fills every string to its maxLength
    items, schemas = _items(example_instances[:1])
    hot = [ChatRequest(item.prompt, item.schema, temperature=1.0) for item in items]
    first, second = sampled.generate(hot), sampled.generate(hot)
    assert [a.text for a in first] == [a.text for a in second]
    for answer, schema in zip(first, schemas, strict=True):
        assert answer.finished
        jsonschema.validate(json.loads(answer.text), schema)


def test_the_shared_prefix_cache_changes_nothing_but_the_cost(tiny_judge_dir, example_instances):
    # one group alone (shared prefix: all but the response) and three groups together (shared: the system message)
    items, _ = _items(example_instances[:3])
    plain = LocalGenerator.from_pretrained(
        str(tiny_judge_dir), device="cpu", sampling=SamplingSettings(max_tokens=768), prefix_cache=False
    )
    cached = LocalGenerator(plain.model, plain.tokenizer, sampling=SamplingSettings(max_tokens=768))
    for batch in (items[:4], items):
        assert [a.text for a in cached.generate(batch)] == [a.text for a in plain.generate(batch)]
    assert len(cached._prefixes) == 2


def test_a_new_prefix_starts_from_the_kept_one_it_shares_most_with(generator, example_instances):
    import torch

    items, _ = _items(example_instances[:2])
    first, second = (generator._prepared(item).ids for item in (items[0], items[-1]))
    system = common_prefix_length([first, second])  # two groups share the system message
    assert system > 100
    fresh = LocalGenerator(generator.model, generator.tokenizer, sampling=generator.sampling)
    seen: list[int] = []
    hook = generator.model.register_forward_pre_hook(lambda _, args, kwargs: seen.append(kwargs["input_ids"].shape[1]),
                                                     with_kwargs=True)  # fmt: skip
    try:
        fresh._prefix_kv(tuple(first[:-5]))
        extended = fresh._prefix_kv(tuple(second[:-5]))
    finally:
        hook.remove()
    assert seen == [len(first) - 5, len(second) - 5 - system]  # the second computed only what it does not share
    alone = LocalGenerator(generator.model, generator.tokenizer, sampling=generator.sampling)._prefix_kv(
        tuple(second[:-5])
    )
    for mine, theirs in zip(extended.layers, alone.layers, strict=True):
        assert mine.keys.shape == theirs.keys.shape
        assert torch.allclose(mine.keys, theirs.keys, atol=1e-5)
        assert torch.allclose(mine.values, theirs.values, atol=1e-5)


@pytest.mark.parametrize(
    ("rows", "shared"),
    [([[1, 2, 3, 4], [1, 2, 3, 5]], 3), ([[1, 2, 3], [1, 2, 3, 4]], 2), ([[7, 8]], 1), ([[1, 2], [3, 4]], 0)],
)
def test_common_prefix_leaves_every_row_a_token(rows, shared):
    assert common_prefix_length(rows) == shared


SYNTH_TEST = Path(__file__).resolve().parents[1] / "datasets" / "judge_synth" / "test.jsonl"


@pytest.fixture(scope="module")
def vlm_generator(tiny_vlm_judge_dir):
    return LocalGenerator.from_pretrained(
        str(tiny_vlm_judge_dir), device="cpu", sampling=SamplingSettings(max_tokens=512)
    )


def _image_items(count):
    """vlm prompts of synthetic examples with (distinct) images, and their schemas."""
    examples = [e for e in read_examples(SYNTH_TEST.read_text().splitlines()) if e.image]
    picked = list({e.image: e for e in examples}.values())[:count]
    items = []
    for example in picked:
        plans = example.plans("vlm")
        (prompt,) = build_group_prompts(example.prompt, plans, [example.response], "vlm", example.image)
        items.append(ChatRequest(prompt, scoring_json_schema(plans)))
    return items


def test_a_vision_language_judge_is_shown_each_rows_image(vlm_generator, example_instances):
    assert vlm_generator.sees_images
    images, (text, *_) = _image_items(2), _items(example_instances[:1])[0]
    alone = [vlm_generator.generate([item])[0] for item in images]
    mixed = vlm_generator.generate([images[0], text, images[1]])
    for answer, item in zip(alone, images, strict=True):
        assert answer.error is None and answer.finished
        jsonschema.validate(json.loads(answer.text), item.schema)
    # greedy rows answer the same alone and in a batch that mixes images and text
    assert [a.text for a in alone] == [mixed[0].text, mixed[2].text] and mixed[1].error is None
    # the image's tokens are in the prompt: many more than the same text without the image
    blind = vlm_generator.generate([ChatRequest(ChatPrompt(images[0].prompt.system, images[0].prompt.user))])[0]
    assert alone[0].prompt_tokens >= blind.prompt_tokens + 16


def test_a_batch_keeps_each_rows_pixels_in_row_order(vlm_generator, example_instances):
    import torch

    images = _image_items(2)
    rows = [vlm_generator._prepare(item) for item in (images[1], _items(example_instances[:1])[0][0], images[0])]
    batch = vlm_generator._vision_inputs(rows)
    assert torch.equal(
        batch["pixel_values"], torch.cat([rows[0].vision["pixel_values"], rows[2].vision["pixel_values"]])
    )
    assert not torch.equal(rows[0].vision["pixel_values"], rows[2].vision["pixel_values"])
    width = batch["input_ids"].shape[1]
    assert batch["input_ids"][1, width - len(rows[1].ids) :].tolist() == rows[1].ids  # left padded
    assert batch["attention_mask"].sum(dim=1).tolist() == [len(row.ids) for row in rows]


def test_image_references_a_judge_reads_and_refuses(vlm_generator, tmp_path):
    png = base64.b64decode(_image_items(1)[0].prompt.image.split(",", 1)[1])
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "sign.png").write_bytes(png)
    (tmp_path / "secret.png").write_bytes(png)
    confined = LocalGenerator(vlm_generator.model, vlm_generator.tokenizer, SamplingSettings(max_tokens=16),
                              processor=vlm_generator.processor, image_dir=tmp_path / "images")  # fmt: skip

    def ask(generator, image):
        return generator.generate([ChatRequest(ChatPrompt("system", "read the sign", image=image))])[0]

    assert ask(confined, "sign.png").error is None
    assert ask(confined, "data:image/png;base64," + base64.b64encode(png).decode()).error is None
    assert "outside the image folder" in ask(confined, "../secret.png").error
    assert "outside the image folder" in ask(confined, str(tmp_path / "secret.png")).error
    assert "is a URL" in ask(confined, "https://example.com/sign.png").error
    assert "does not exist" in ask(confined, "absent.png").error
    assert "reads no image files" in ask(vlm_generator, str(tmp_path / "images" / "sign.png")).error
    assert "not a readable image" in ask(confined, "data:image/png;base64," + base64.b64encode(b"junk").decode()).error


def test_hostile_image_references_fail_their_own_row_only(vlm_generator, tmp_path):
    import os

    png = base64.b64decode(_image_items(1)[0].prompt.image.split(",", 1)[1])
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "sign.png").write_bytes(png)
    os.symlink(tmp_path / "images" / "loop-a", tmp_path / "images" / "loop-b")
    os.symlink(tmp_path / "images" / "loop-b", tmp_path / "images" / "loop-a")
    confined = LocalGenerator(vlm_generator.model, vlm_generator.tokenizer, SamplingSettings(max_tokens=8),
                              processor=vlm_generator.processor, image_dir=tmp_path / "images")  # fmt: skip
    hostile = ["sign\x00.png", "n" * 300 + ".png", "loop-a", "loop-b/x.png"]
    rows = [ChatRequest(ChatPrompt("system", "read the sign", image=image)) for image in ["sign.png", *hostile]]
    answers = confined.generate(rows)
    assert answers[0].error is None  # the good row of the batch is answered
    for reference, answer in zip(hostile, answers[1:], strict=True):
        assert answer.error and "cannot be shown to the judge" in answer.error, (reference, answer.error)


def test_an_unexpected_failure_preparing_one_row_fails_that_row_only(generator, example_instances, monkeypatch):
    items, _ = _items(example_instances[:1])
    prepare = LocalGenerator._prepare

    def failing(self, item):
        if item is items[1]:
            raise RuntimeError("boom")
        return prepare(self, item)

    monkeypatch.setattr(LocalGenerator, "_prepare", failing)
    answers = generator.generate(items[:3])
    assert answers[0].error is None and answers[2].error is None
    assert "RuntimeError: boom" in answers[1].error


def test_the_image_of_a_group_is_decoded_once(vlm_generator, monkeypatch):
    from genrm.engine import generation as hf_generation
    from genrm.engine import images

    hf_generation._decoded_image.cache_clear()
    calls = []
    load = images.load_sent_image
    monkeypatch.setattr(images, "load_sent_image", lambda *a: calls.append(a[0][:20]) or load(*a))
    item = _image_items(1)[0]
    answers = vlm_generator.generate([item] * 4)
    assert all(a.error is None for a in answers) and len(calls) == 1
