"""The pairwise judge on image responses (text-to-image, editing, interleaved) and on MMRB2's layout: several images
per request, each where its part is, the swap exchanging the responses' images, the same evaluation with a per-task
breakdown, through a judge on loopback and the tiny vision judge in process."""

from __future__ import annotations

import base64
import io
import json
import shutil
from pathlib import Path

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli.main import main
from genrm.engine import ChatPrompt, ChatRequest, Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods.pairwise.evaluation import evaluate_pairs
from genrm.methods.pairwise.judge_training import PairTrace, sft_record
from genrm.methods.pairwise.mmrb2 import read_benchmark, read_pairs, task_of
from genrm.methods.pairwise.models import MAX_IMAGES, PairExample
from genrm.methods.pairwise.prompts import pair_request
from genrm.methods.pairwise.scene_judge import COLOURS, colour_judge, position_judge, responder, tagged_answer

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"
IMAGE_PAIRS_FILE = EXAMPLES / "pairs" / "image_pairs.jsonl"
TEXT_PAIRS_FILE = EXAMPLES / "pairs" / "pairs.jsonl"
MMRB2 = EXAMPLES / "mmrb2"
IMAGE_PAIRS = read_pairs(IMAGE_PAIRS_FILE)
EDIT = next(p for p in IMAGE_PAIRS if p.id == "edit-yellow")
INTERLEAVED = next(p for p in IMAGE_PAIRS if p.id == "interleaved-blue")


def _colour(data_uri: str) -> str:
    from PIL import Image

    picture = Image.open(io.BytesIO(base64.b64decode(data_uri.split(",", 1)[1]))).convert("RGB")
    pixel = picture.getpixel((picture.width // 2, picture.height // 2))
    return min(COLOURS, key=lambda name: sum((a - b) ** 2 for a, b in zip(COLOURS[name], pixel, strict=True)))


def test_a_prompt_interleaves_text_and_images_where_their_parts_are():
    prompt = ChatPrompt("s", "PROMPT:\nedit\n\nRESPONSE A:\n\n\nRESPONSE B:\nsaid", "lead.png",
                        ((8, "in.png"), (26, "a.png"), (40, "b.png")))  # fmt: skip
    assert prompt.images == ("lead.png", "in.png", "a.png", "b.png")
    assert prompt.user_parts() == [("image", "lead.png"), ("text", "PROMPT:\n"), ("image", "in.png"),
                                   ("text", "edit\n\nRESPONSE A:\n"), ("image", "a.png"),
                                   ("text", "\n\nRESPONSE B:\n"), ("image", "b.png"), ("text", "said")]  # fmt: skip
    user = prompt.messages()[1]["content"]
    assert [p["type"] for p in user] == ["image_url", "text", "image_url", "text", "image_url", "text", "image_url",
                                         "text"]  # fmt: skip
    assert [p for p in prompt.messages(image_placeholders=True)[1]["content"] if p["type"] == "image"] == [
        {"type": "image"}] * 4  # fmt: skip
    assert ChatPrompt.from_messages(prompt.messages()) == prompt  # a scripted judge behind HTTP reads it back
    assert prompt.with_images(str.upper).images == ("LEAD.PNG", "IN.PNG", "A.PNG", "B.PNG")
    for offsets in (((5, "x"), (2, "y")), ((99, "x"),), ((-1, "x"),)):
        with pytest.raises(ValueError, match="offsets must be in order and within the user text"):
            ChatPrompt("s", "short text", None, offsets)
    assert ChatPrompt("s", "text").messages()[1]["content"] == "text"  # no image: the plain form, as before


def test_the_request_shows_the_prompt_then_each_response_with_its_images_and_the_swap_exchanges_them():
    prompt = pair_request(EDIT).prompt
    assert prompt.user == ("PROMPT:\nMake the square yellow and keep the rest.\n\nRESPONSE A:\n\n\nRESPONSE B:\n")
    assert [part for part in prompt.user_parts()] == [
        ("text", "PROMPT:\n"), ("image", "squares/green.png"),
        ("text", "Make the square yellow and keep the rest.\n\nRESPONSE A:\n"), ("image", "squares/yellow.png"),
        ("text", "\n\nRESPONSE B:\n"), ("image", "squares/green.png")]  # fmt: skip
    swapped = pair_request(EDIT.swapped()).prompt
    assert swapped.images == ("squares/green.png", "squares/green.png", "squares/yellow.png")
    assert EDIT.swapped().label == "B" and "text_faithfulness" in prompt.system  # the editing family's criteria
    interleaved = pair_request(INTERLEAVED).prompt.user_parts()
    assert interleaved[1:3] == [("image", "squares/blue.png"),
                                ("text", "Here it is. The square is blue.\n\nRESPONSE B:\n")]  # fmt: skip


def test_the_prompt_images_of_a_condition_replace_the_prompts_own_and_never_the_responses():
    shown = pair_request(EDIT, ["blank.png"]).prompt
    assert shown.images == ("blank.png", "squares/yellow.png", "squares/green.png")
    assert "Make the square yellow" in shown.user
    single = next(p for p in read_pairs(TEXT_PAIRS_FILE))
    assert pair_request(single, ["other.png"]).prompt.image == "other.png"  # the older single-image form kept
    text_to_image = IMAGE_PAIRS[0]
    assert text_to_image.prompt_images() == [] and len(text_to_image.response_images()) == 2


@pytest.mark.parametrize(
    ("update", "words"),
    [
        ({"response_a": [["video", "a.mp4"]]}, "response_a"),
        ({"response_a": [["image", ""]]}, "an image part is empty"),
        ({"response_a": [["image", "a.png"]] * (MAX_IMAGES + 1)}, f"at most {MAX_IMAGES}"),
        ({"prompt": [["text", "x"]] * 65}, "at most 64"),
        ({"colour": "red"}, "Extra inputs are not permitted"),
    ],
)
def test_a_pair_with_parts_it_cannot_show_is_refused_with_the_field(update, words):
    line = {"id": "x", "prompt": "p", "response_a": "a", "response_b": "b", **update}
    with pytest.raises(ValueError, match=words):
        PairExample.model_validate(line)


def test_the_scripted_colour_judge_and_the_evaluation_on_image_responses():
    engine = ScriptedEngine(lambda request: colour_judge(request, IMAGE_PAIRS_FILE.parent))
    report = evaluate_pairs(IMAGE_PAIRS, Judge(engine))
    (real,) = report.conditions
    assert (real.pairs, real.judgements, real.accuracy, real.a_rate, real.swap_agreement, real.r_cons) == (
        6, 12, 1.0, 0.5, 1.0, 1.0)  # fmt: skip
    assert [(f.group, f.pairs, f.accuracy) for f in report.by_task] == [
        ("text_to_image", 2, 1.0), ("image_editing", 2, 1.0), ("interleaved", 2, 1.0)]  # fmt: skip
    answer = colour_judge(pair_request(IMAGE_PAIRS[0]), IMAGE_PAIRS_FILE.parent)
    assert "<response_a_img_understanding>The image is red.</response_a_img_understanding>" in answer
    biased = evaluate_pairs(IMAGE_PAIRS, Judge(ScriptedEngine(position_judge)))
    assert [(f.group, f.a_rate, f.r_cons) for f in biased.by_task] == [
        ("text_to_image", 1.0, 0.0), ("image_editing", 1.0, 0.0), ("interleaved", 1.0, 0.0)]  # fmt: skip
    blank = evaluate_pairs(IMAGE_PAIRS, Judge(engine), ["blank"]).conditions[0]
    assert blank.pairs == 2  # only the editing pairs have a prompt image to blank; the responses keep theirs


def test_a_judge_that_cannot_see_images_is_refused_for_image_responses():
    with pytest.raises(ValueError, match="these pairs have images, and .* cannot see them"):
        evaluate_pairs(IMAGE_PAIRS[:1], Judge(ScriptedEngine(position_judge, sees_images=False)))


def test_the_shipped_mmrb2_files_read_as_the_shipped_pairs():
    read = [pair for task in ("t2i", "edit", "interleaved", "reasoning") for pair in
            read_benchmark(MMRB2 / f"{task}.json")]  # fmt: skip
    expected = {p.id: p for p in [*IMAGE_PAIRS, *read_pairs(TEXT_PAIRS_FILE)]}
    assert [p.id for p in read] == list(expected)

    def colours(pair):
        return [Path(ref).stem.split("-")[0] for ref in pair.images()]

    for pair in read:
        own = expected[pair.id]
        assert (pair.family, pair.label, colours(pair)) == (own.family, own.label, colours(own))
        assert pair_request(pair).prompt.user == pair_request(own).prompt.user
    assert {p.source for p in read} == {"colour-t2i", "colour-edit", "colour-interleaved", "colour-vqa"}


def test_mmrb2_layout_details(tmp_path):
    pair = {"id": 7, "prompt_content": [["text", "Draw."]], "chosen": None, "human_preference": "B",
            "response_a": {"model_name": "m", "response_content": [["image", "images/a.png"]]},
            "response_b": {"response_content": [["image", "images/b.png"]]}, "human_annotations": [1, 2]}  # fmt: skip
    (tmp_path / "t2i.json").write_text(json.dumps({"pairs": [pair]}))
    (read,) = read_benchmark(tmp_path / "t2i.json")
    assert (read.id, read.label, read.family, read.response_images()) == ("7", "B", "text_to_image",
                                                                         ["images/a.png", "images/b.png"])  # fmt: skip
    assert task_of("x.json", "image") == "text_to_image" and task_of("edit.json") == "image_editing"
    with pytest.raises(ValueError, match="its name is not one of MMRB2's tasks"):
        task_of("bench.json")
    (tmp_path / "bench.json").write_text(json.dumps({"pairs": [{**pair, "prompt_content": [["audio", "x"]]}]}))
    with pytest.raises(ValueError, match=r"bench.json: pair 1 \(7\): prompt_content"):
        read_benchmark(tmp_path / "bench.json", "reasoning")
    (tmp_path / "bad.json").write_text('{"items": []}')
    with pytest.raises(ValueError, match="not MMRB2's layout"):
        read_benchmark(tmp_path / "bad.json", "edit")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        read_benchmark(tmp_path / "broken.json", "edit")
    with pytest.raises(ValueError, match="a task is named for MMRB2's .json files"):
        read_pairs(IMAGE_PAIRS_FILE, "edit")


def test_genrm_pairs_eval_on_the_mmrb2_files_over_http_with_a_breakdown_per_task(tmp_path):
    with FakeJudgeServer() as server:
        server.state.responder = responder(colour_judge, MMRB2)
        files = [str(MMRB2 / f"{task}.json") for task in ("t2i", "edit", "interleaved", "reasoning")]
        code = main(["pairs", "eval", *files, "--judge", f"openai:judge@{server.url}", "--conditions", "real,blank",
                     "-o", str(tmp_path)])  # fmt: skip
        sent = server.state.requests[:]
    assert code == 0
    report = json.loads((tmp_path / "pairs_eval.json").read_text())
    assert [(r["condition"], r["pairs"], r["accuracy"]) for r in report["conditions"]] == [
        ("real", 14, 1.0), ("blank", 10, 0.6)]  # fmt: skip
    tasks = {(r["group"], r["condition"]): r["accuracy"] for r in report["by_task"]}
    assert tasks == {("text_to_image", "real"): 1.0, ("image_editing", "real"): 1.0, ("interleaved", "real"): 1.0,
                     ("reasoning", "real"): 1.0, ("image_editing", "blank"): 1.0,
                     ("reasoning", "blank"): 0.5}  # fmt: skip
    assert {r["group"] for r in report["by_source"]} == {"colour-t2i", "colour-edit", "colour-interleaved",
                                                          "colour-vqa"}  # fmt: skip
    assert "By task:" in (tmp_path / "pairs_eval.md").read_text()
    # an editing pair's requests: the input image (or the blank one), then A's, then B's, each sent as its bytes in
    # the order of the parts, and the swap exchanging the responses' images
    shown = set()
    for body in sent:
        if "Make the square yellow" in json.dumps(body["messages"][-1]["content"]):
            urls = [p["image_url"]["url"] for p in body["messages"][-1]["content"] if p["type"] == "image_url"]
            assert all(url.startswith("data:image/png;base64,") for url in urls)
            shown.add(tuple(_colour(url) for url in urls))
    assert shown == {("green", "yellow", "green"), ("green", "green", "yellow"), ("grey", "yellow", "green"),
                     ("grey", "green", "yellow")}  # fmt: skip


def test_genrm_pairs_eval_refuses_files_in_two_folders_and_a_task_for_a_jsonl(tmp_path, capsys):
    shutil.copy(MMRB2 / "t2i.json", tmp_path / "t2i.json")
    assert main(["pairs", "eval", str(MMRB2 / "edit.json"), str(tmp_path / "t2i.json"), "--judge", "scripted"]) == 2
    assert "must share one folder" in capsys.readouterr().err
    assert main(["pairs", "eval", str(IMAGE_PAIRS_FILE), "--task", "edit", "--judge", "scripted"]) == 2
    assert "a task is named for MMRB2's .json files" in capsys.readouterr().err
    (tmp_path / "mine.json").write_text(json.dumps({"pairs": []}))
    assert main(["pairs", "eval", str(tmp_path / "mine.json"), "--judge", "scripted"]) == 2
    assert "mine.json: its name is not one of MMRB2's tasks" in capsys.readouterr().err


def test_an_sft_record_of_image_responses_has_a_placeholder_per_image_that_trl_fills():
    from trl.data_utils import prepare_multimodal_messages

    answer = tagged_answer("green", "", "", (8, 3), "The image is yellow.", "The image is green.")
    record = sft_record(PairTrace(id="e", input_id="e", pair=EDIT, answer=answer))
    assert record["images"] == ["squares/green.png", "squares/yellow.png", "squares/green.png"]
    filled = prepare_multimodal_messages(record["prompt"], images=["input", "a", "b"])
    assert [part["image"] for part in filled[1]["content"] if part["type"] == "image"] == ["input", "a", "b"]
    assert [part["type"] for part in filled[1]["content"]] == ["text", "image", "text", "image", "text", "image"]


def test_the_tiny_vision_judge_reads_every_image_of_a_pair_in_process(tiny_vlm_judge_dir):
    from genrm.engine import EngineOptions, SamplingSettings, make_judge, run_blocking

    judge = make_judge(f"transformers:{tiny_vlm_judge_dir}", EngineOptions(
        SamplingSettings(max_tokens=4), image_dir=str(IMAGE_PAIRS_FILE.parent), device="cpu"))  # fmt: skip
    generator = judge.engine.generator
    one = generator._encode(ChatPrompt("s", "u", "squares/red.png"))
    three = generator._encode(pair_request(EDIT).prompt)
    image_token = generator.processor.tokenizer.convert_tokens_to_ids(generator.processor.image_token)
    per_image = one[0].count(image_token)
    assert per_image > 0 and three[0].count(image_token) == 3 * per_image
    assert three[1]["pixel_values"].shape[0] == 3
    (reply,) = run_blocking(judge.engine.complete([pair_request(EDIT)]))
    assert reply.error is None and reply.completion_tokens > 0
    run_blocking(judge.aclose())


def test_a_text_only_judge_in_process_refuses_image_responses(tiny_judge_dir):
    from genrm.engine import EngineOptions, make_judge, run_blocking

    judge = make_judge(f"transformers:{tiny_judge_dir}", EngineOptions(device="cpu"))
    (reply,) = run_blocking(judge.engine.complete([ChatRequest(pair_request(IMAGE_PAIRS[0]).prompt)]))
    assert reply.error is not None and "text-only judge" in reply.error
    run_blocking(judge.aclose())
