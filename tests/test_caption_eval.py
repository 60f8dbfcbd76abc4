"""``genrm captions eval``: the COCO caption metrics through pycocoevalcap, checked against a published example and
the metrics' definitions; the agreement with a human ranking; the command's report, files and refusals."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from genrm.cli import main
from genrm.evaluation import reference_metrics
from genrm.evaluation.caption_eval import agreement, evaluate_captions
from genrm.evaluation.reference_metrics import reference_scores
from genrm.methods.balcap.models import BalCapInstance

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "captions"
JAVA = shutil.which("java") is not None
needs_java = pytest.mark.skipif(not JAVA, reason="METEOR and the PTB tokenizer need Java")


def _one(references: list[str], caption: str, metrics: list[str]):
    scores, failed = reference_scores({"x": references}, {"sys": {"x": caption}}, metrics)
    assert not failed, failed
    return scores["sys"]


def test_rouge_l_equals_the_f_measure_of_rouge_scores_published_example():
    # rouge-score's README: 'The quick brown fox jumps over the lazy dog' against 'The quick brown dog jumps on the
    # log.' has ROUGE-L precision 0.625 and recall 0.5556 (an LCS of 5 over 8 and 9 tokens). pycocoevalcap's ROUGE-L
    # is the F-measure with beta 1.2 of the same LCS precision and recall.
    precision, recall, beta = 0.625, 5 / 9, 1.2
    expected = (1 + beta**2) * precision * recall / (recall + beta**2 * precision)
    score = _one(["The quick brown fox jumps over the lazy dog"], "The quick brown dog jumps on the log.", ["rouge_l"])
    assert score["rouge_l"].value == pytest.approx(expected, abs=1e-9)


def test_bleu_4_by_its_definition_and_the_identities_of_the_others():
    # 'a b c d e f' against 'a b c d e g' (PTB and plain tokenization agree on these): n-gram precisions 5/6, 4/5,
    # 3/4, 2/3 and equal lengths (no brevity penalty), so BLEU-4 is their geometric mean.
    score = _one(["a b c d e g"], "a b c d e f", ["bleu4", "rouge_l"])
    assert score["bleu4"].value == pytest.approx((5 / 6 * 4 / 5 * 3 / 4 * 2 / 3) ** 0.25, rel=1e-6)
    same = _one(["A red car is parked next to two dogs."], "A red car is parked next to two dogs.",
                ["bleu4", "rouge_l"])  # fmt: skip
    assert same["bleu4"].value == pytest.approx(1.0) and same["rouge_l"].value == pytest.approx(1.0)


def test_cider_d_uses_the_corpus_and_is_ten_for_an_exact_caption():
    references = {"a": ["a red car by two dogs"], "b": ["a white fridge with three apples"]}
    exact = {"a": "a red car by two dogs", "b": "a white fridge with three apples"}
    off = {"a": "a red car", "b": "a green bench in a park"}
    scores, failed = reference_scores(references, {"exact": exact, "off": off}, ["cider"])
    assert not failed
    assert scores["exact"]["cider"].per_caption == pytest.approx([10.0, 10.0])
    assert scores["off"]["cider"].value < scores["exact"]["cider"].value
    assert scores["off"]["cider"].per_caption[0] > scores["off"]["cider"].per_caption[1] == pytest.approx(0.0)


@needs_java
def test_meteor_ranks_a_paraphrase_above_an_unrelated_caption_and_is_one_for_an_exact_one():
    references = {"a": ["a man is riding a bicycle down the street"]}
    exact = {"a": "a man is riding a bicycle down the street"}
    close = {"a": "a man rides a bike along the road"}
    far = {"a": "three apples on a white fridge"}
    scores, failed = reference_scores(references, {"exact": exact, "close": close, "far": far}, ["meteor"])
    assert not failed
    meteor = {name: scores[name]["meteor"].value for name in scores}
    assert meteor["exact"] == pytest.approx(1.0, abs=1e-3) and meteor["exact"] > meteor["close"] > meteor["far"]


def test_blank_captions_score_zero_in_any_position_and_a_blank_reference_is_refused():
    references = {"a": ["a red car"], "b": ["two dogs"], "c": ["a bench"]}
    systems = {"first": {"a": "", "b": "two dogs", "c": "a bench"}, "last": {"a": "a red car", "b": "two dogs",
                                                                             "c": ""}}  # fmt: skip
    scores, failed = reference_scores(references, systems, ["rouge_l", "cider"])
    assert not failed
    assert scores["first"]["rouge_l"].per_caption[0] == 0.0 and scores["last"]["rouge_l"].per_caption[2] == 0.0
    assert scores["last"]["rouge_l"].per_caption[:2] == pytest.approx([1.0, 1.0])
    with pytest.raises(ValueError, match="no reference may be blank"):
        reference_scores({"a": ["  "]}, {"s": {"a": "x"}}, ["bleu4"])
    with pytest.raises(ValueError, match="unknown reference metric"):
        reference_scores({"a": ["x"]}, {"s": {"a": "x"}}, ["bleu5"])


def test_without_java_the_plain_tokenizer_is_used_meteor_is_skipped_and_the_report_says_so(monkeypatch):
    monkeypatch.setattr(reference_metrics.shutil, "which", lambda name: None)
    scores, failed = reference_scores({"a": ["A red car, parked."]}, {"s": {"a": "a red car parked"}},
                                      ["bleu4", "meteor"])  # fmt: skip
    assert scores["s"]["bleu4"].value == pytest.approx(1.0) and "meteor" not in scores["s"]
    assert "Java" in failed["meteor"]
    instances = [BalCapInstance(id="x", image="x.png", reference="A red car.", responses=["A red car.", "A dog."])]
    report = evaluate_captions(instances, ["bleu4", "meteor"], names=["a", "b"], skipped={"meteor": failed["meteor"]})
    text = report.markdown()
    assert "plain tokenizer (no Java)" in text and "skipped METEOR: needs Java" in text


def test_a_metric_whose_library_fails_is_reported_with_the_reason_never_as_zero(monkeypatch):
    def broken(metric):
        raise OSError("java crashed")

    monkeypatch.setattr(reference_metrics, "_scorer", broken)
    scores, failed = reference_scores({"a": ["a red car"]}, {"s": {"a": "a red car"}}, ["rouge_l"])
    assert scores == {"s": {}} and "java crashed" in failed["rouge_l"]


def test_agreement_is_spearmans_rho_over_the_systems():
    # human ranking: b best, then a, then c (positions 1, 0, 2 for a, b, c)
    assert agreement([0.5, 0.9, 0.1], [1, 0, 2]).rho == pytest.approx(1.0)
    assert agreement([0.1, 0.0, 0.9], [1, 0, 2]).rho == pytest.approx(-1.0)
    # four systems, one swap of neighbours: rho = 1 - 6 * 2 / (4 * 15)
    four = agreement([0.4, 0.3, 0.1, 0.2], [0, 1, 2, 3])
    assert four.rho == pytest.approx(1 - 6 * 2 / 60) and four.systems == 4 and 0 < four.p_value < 1
    assert agreement([0.5, 0.5, 0.5], [0, 1, 2]).rho is None  # a metric that does not vary ranks nothing
    assert agreement([None, 0.2, 0.3], [0, 1, 2]).systems == 2


def test_genrm_captions_eval_writes_the_table_the_json_and_the_png(tmp_path, capsys):
    source = EXAMPLES / "captions.jsonl"
    code = main(["captions", "eval", str(source), "--names", "right", "flawed", "--judge", "scripted",
                 "--human-ranking", "right,flawed", "--metrics", "bleu4", "rouge_l", "cider", "b_capscore",
                 "-o", str(tmp_path / "out"), "-q"])  # fmt: skip
    assert code == 0
    shown = capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "eval.json").read_text())
    figures = report["figures"]
    for metric in ("bleu4", "rouge_l", "cider", "b_capscore"):
        assert figures["right"][metric] > figures["flawed"][metric]  # the right captions are their references
    assert figures["right"]["cider"] == pytest.approx(10.0)
    assert report["alignment"]["bleu4"]["rho"] == pytest.approx(1.0)
    assert f"| right | 4 | 14.0 | {figures['right']['bleu4']:.3f} |" in shown
    assert (tmp_path / "out" / "eval.md").read_text().strip() in shown
    assert (tmp_path / "out" / "eval.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    per_caption = report["per_caption"]["rouge_l"]["flawed"]
    assert len(per_caption) == 4 and not any(math.isnan(v) for v in per_caption)


def test_genrm_captions_eval_refuses_before_any_work(tmp_path, capsys):
    source = str(EXAMPLES / "captions.jsonl")
    assert main(["captions", "eval", source, "--metrics", "b_capscore"]) == 2
    assert "needs a judge" in capsys.readouterr().err
    assert main(["captions", "eval", source, "--judge", "scripted", "--human-ranking", "a", "b"]) == 2
    assert "must name each system once (caption 1, caption 2)" in capsys.readouterr().err
    if reference_metrics.unavailable("spice"):
        assert main(["captions", "eval", source, "--metrics", "spice"]) == 2
        assert "Stanford CoreNLP" in capsys.readouterr().err
    duplicate = tmp_path / "dup.jsonl"
    line = (EXAMPLES / "captions.jsonl").read_text().splitlines()[0]
    duplicate.write_text(line + "\n" + line + "\n")
    assert main(["captions", "eval", str(duplicate), "--metrics", "bleu4"]) == 2
    assert "ids must be unique" in capsys.readouterr().err


# Question answering from captions


def _qa_items():
    from genrm.evaluation.caption_qa import QAItem

    return [QAItem.model_validate({"id": "park", "questions": [
        {"question": "What colour is the car?", "choices": ["red", "blue"], "answer": "red", "category": "colours"},
        {"question": "How many dogs?", "choices": ["one", "two", "three"], "answer": "two", "category": "counts"},
        {"question": "What is on the bench?", "choices": ["a cat", "a bag"], "answer": "a bag"}]})]  # fmt: skip


def _knows(request):
    # A reader that answers from the description: the right option's letter when the description names it, "cannot
    # tell" when it names no option, and a garbled reply about benches (a failed judgement).
    from genrm.evaluation.caption_qa import CANNOT_TELL

    user = request.prompt.user
    description = user.split("DESCRIPTION:\n")[1].split("\n\nQUESTION:")[0]
    if "bench" in user.split("QUESTION:\n")[1].split("\n")[0]:
        return "the bench, I think"
    options = [line.split(". ", 1) for line in user.split("OPTIONS:\n")[1].splitlines()]
    named = [letter for letter, text in options if text != CANNOT_TELL and text in description.split()]
    return json.dumps({"answer": named[0] if named else options[-1][0]})


def test_questions_are_answered_from_the_caption_alone_and_counted_right_cannot_tell_and_failed():
    from genrm.engine import Judge, run_blocking
    from genrm.engine.scripted import ScriptedEngine
    from genrm.evaluation.caption_qa import answer_questions

    engine = ScriptedEngine(_knows)
    captions = {"park": ["A red car and two dogs near a bench.", "A blue car. One dog sleeps.", "A park."],
                "kitchen": ["A fridge.", "A fridge.", "A fridge."]}  # fmt: skip
    result = run_blocking(answer_questions(captions, _qa_items(), ["full", "wrong", "vague"], Judge(engine, 0),
                                           [None, 3]))  # fmt: skip
    assert result.unmatched == 1  # the kitchen has no questions
    assert result.accuracy("full", None) == {"questions": 3, "failed": 1, "right": 2, "cannot_tell": 0,
                                             "accuracy": 1.0}  # fmt: skip
    assert result.accuracy("wrong", None)["accuracy"] == 0.0  # "blue", "One": wrong options picked
    assert result.accuracy("vague", None) == {"questions": 3, "failed": 1, "right": 0, "cannot_tell": 2,
                                              "accuracy": 0.0}  # fmt: skip
    # cut to 3 words, "A red car" still names the colour, no longer the dogs
    assert result.accuracy("full", 3) == {"questions": 3, "failed": 1, "right": 1, "cannot_tell": 1,
                                          "accuracy": 0.5}  # fmt: skip
    assert result.accuracy("full", None, "counts")["accuracy"] == 1.0 and result.categories() == ["colours", "counts"]
    assert all(r.prompt.image is None for r in engine.requests)  # the image is never shown
    assert {r.schema["properties"]["answer"]["enum"][-1] for r in engine.requests} == {"C", "D"}
    shown = [r.prompt.user.split("DESCRIPTION:\n")[1].split("\n\n")[0] for r in engine.requests]
    assert "A red car" in shown and all(len(s.split()) <= 3 for s in shown if s.startswith("A red car") and
                                        s != "A red car and two dogs near a bench.")  # fmt: skip


def test_a_question_file_is_checked_before_anything_is_judged(tmp_path, capsys):
    from pydantic import ValidationError

    from genrm.evaluation.caption_qa import QAQuestion

    with pytest.raises(ValidationError, match="answer must be one of the choices"):
        QAQuestion(question="q", choices=["a", "b"], answer="c")
    with pytest.raises(ValidationError, match="choices must differ"):
        QAQuestion(question="q", choices=["a", "A"], answer="a")
    with pytest.raises(ValidationError, match="the option every question gets"):
        QAQuestion(question="q", choices=["a", "The description does not tell"], answer="a")
    source = str(EXAMPLES / "captions.jsonl")
    stray = tmp_path / "stray.jsonl"
    stray.write_text(json.dumps({"id": "elsewhere", "questions": [{"question": "q", "choices": ["a", "b"],
                                                                   "answer": "a"}]}) + "\n")  # fmt: skip
    assert main(["captions", "eval", source, "--judge", "scripted", "--questions", str(stray)]) == 2
    assert "questions about 'elsewhere' have no caption" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "red-square", "questions": [{"question": "q", "choices": ["a"], "answer": "a"}]}\n')
    assert main(["captions", "eval", source, "--judge", "scripted", "--questions", str(bad)]) == 2
    assert "bad.jsonl line 1: questions.0.choices" in capsys.readouterr().err
    assert main(["captions", "eval", source, "--questions", str(bad)]) == 2
    assert "answered by a judge" in capsys.readouterr().err


def test_genrm_captions_eval_asks_a_judge_on_loopback_the_shipped_questions(tmp_path, scene_dir):
    # The real path: a judge behind HTTP gets each question with a schema of option letters and no image, and the
    # report's QA figures are the share it answered right.
    from fake_judge import FakeJudgeServer

    shutil.copy(EXAMPLES / "captions.jsonl", scene_dir / "captions.jsonl")
    lines = (EXAMPLES / "questions.jsonl").read_text().splitlines()
    right = {(q["question"], *q["choices"]): q["answer"] for line in lines for q in json.loads(line)["questions"]}
    answers = []

    def respond(body):  # a reader that knows every answer
        if body.get("response_format", {}).get("json_schema", {}).get("name") != "caption_qa":
            return None
        answers.append(body)
        user = body["messages"][-1]["content"]
        question = user.split("QUESTION:\n")[1].split("\n")[0]
        options = dict(line.split(". ", 1)[::-1] for line in user.split("OPTIONS:\n")[1].splitlines())
        return json.dumps({"answer": options[right[(question, *list(options)[:-1])]]})

    with FakeJudgeServer() as judge:
        judge.state.responder = respond
        code = main(["captions", "eval", str(scene_dir / "captions.jsonl"), "--judge", f"openai:fake@{judge.url}",
                     "--metrics", "qa", "--questions", str(EXAMPLES / "questions.jsonl"), "--word-limits", "4",
                     "-o", str(tmp_path / "out"), "-q"])  # fmt: skip
    assert code == 0
    report = json.loads((tmp_path / "out" / "eval.json").read_text())
    assert report["figures"]["caption 1"] == {"qa": 1.0, "qa@4": 1.0}
    assert len(answers) == 10 * 2 * 2  # questions x systems x (whole, 4 words)
    assert all(isinstance(b["messages"][-1]["content"], str) for b in answers)  # text only: no image part
    enum = answers[0]["response_format"]["json_schema"]["schema"]["properties"]["answer"]["enum"]
    assert enum == ["A", "B", "C", "D", "E"]


# Blind ranking


def _scored(request):
    # A judge whose scores follow each caption's own words ("acc7 comp5 clar9 hall1"), so that every figure is known
    # whatever the shuffled order; its ranking lists the labels in the order shown (right or wrong by chance).
    import re

    from genrm.methods.rubicap.blind_ranking import answer_text

    shown = re.findall(r"^(Caption [A-Z]):\n(.*)$", request.prompt.user, re.MULTILINE)
    scores = {
        label: dict(
            zip(
                ("accuracy", "completeness", "clarity", "hallucination_penalty"),
                map(int, re.findall(r"\d+", caption)),
                strict=True,
            )
        )
        for label, caption in shown
    }
    answer = json.loads(answer_text(scores))
    answer["ranking"] = [label for label, _ in shown]
    return json.dumps(answer)


def test_the_blind_ranking_scores_by_the_sources_total_hides_names_and_records_the_shuffle():
    from genrm.engine import Judge, run_blocking
    from genrm.engine.scripted import ScriptedEngine
    from genrm.methods.rubicap.blind_ranking import rank_captions, total_score

    assert total_score(9, 6, 9, 2) == pytest.approx(8 - 3)
    captions = ["acc9 comp6 clar9 hall2", "acc6 comp6 clar6 hall0", "acc9 comp6 clar9 hall2"]
    images = {f"img{n}": (f"img{n}.png", captions) for n in range(6)}
    engine = ScriptedEngine(_scored)
    result = run_blocking(rank_captions(images, ["alpha", "beta", "gamma"], Judge(engine, 0), seed=3))
    # totals: alpha 5, beta 6, gamma 5: beta first everywhere, alpha and gamma share rank 2
    assert result.summary("beta") == {"images": 6, "failed": 0, "first": 1.0, "mean_rank": 1.0, "total": 6.0,
                                      "accuracy": 6.0, "completeness": 6.0, "clarity": 6.0,
                                      "hallucination_penalty": 0.0}  # fmt: skip
    assert result.summary("alpha")["mean_rank"] == 2.0 == result.summary("gamma")["mean_rank"]
    assert {tuple(order) for order in result.orders.values()} != {("alpha", "beta", "gamma")}  # really shuffled
    again = run_blocking(rank_captions(images, ["alpha", "beta", "gamma"], Judge(ScriptedEngine(_scored), 0), seed=3))
    assert again.orders == result.orders  # seeded
    for request in engine.requests:
        assert request.prompt.image.startswith("img") and not any(n in request.prompt.user for n in ("alpha", "beta"))
    # the judge listed the labels as shown; wherever beta was not shown first, that disagrees with its own scores
    assert result.inconsistent == sum(order[0] != "beta" for order in result.orders.values())


def test_a_failed_ranking_fails_every_caption_of_its_image_and_a_blind_judge_is_refused():
    from genrm.engine import Judge, run_blocking
    from genrm.engine.scripted import ScriptedEngine
    from genrm.methods.rubicap.blind_ranking import rank_captions

    images = {"a": ("a.png", ["acc1 comp1 clar1 hall1", "acc2 comp2 clar2 hall2"])}
    garbled = run_blocking(rank_captions(images, ["x", "y"], Judge(ScriptedEngine(lambda r: "Caption A wins."), 0)))
    assert garbled.summary("x")["failed"] == 1 == garbled.summary("y")["failed"]
    assert garbled.summary("x")["first"] is None and garbled.captions[0].failure.startswith("unreadable")
    blind = Judge(ScriptedEngine(_scored, sees_images=False), 0)
    with pytest.raises(ValueError, match="cannot see images"):
        run_blocking(rank_captions(images, ["x", "y"], blind))
    with pytest.raises(ValueError, match="2 captions for 3 systems"):
        run_blocking(rank_captions(images, ["x", "y", "z"], Judge(ScriptedEngine(_scored), 0)))


def test_genrm_captions_eval_ranks_through_a_judge_on_loopback(tmp_path, scene_dir):
    from fake_judge import FakeJudgeServer

    from genrm.methods.rubicap.scene_judge import responder

    shutil.copy(EXAMPLES / "captions.jsonl", scene_dir / "captions.jsonl")
    for name in ("red-square.png", "two-blue-circles.png", "green-triangle.png", "yellow-bar.png"):
        shutil.copy(EXAMPLES / name, scene_dir / name)  # the shipped images carry their facts
    seen = []
    with FakeJudgeServer() as judge:
        judge.state.responder = lambda body: seen.append(body) or responder(body)
        code = main(["captions", "eval", str(scene_dir / "captions.jsonl"), "--judge", f"openai:fake@{judge.url}",
                     "--metrics", "ranking", "--names", "sys-right", "sys-flawed", "--seed", "1", "-o", str(tmp_path),
                     "-q"])  # fmt: skip
    assert code == 0 and len(seen) == 4  # one call per image, both captions in it
    report = json.loads((tmp_path / "eval.json").read_text())
    figures = report["figures"]
    assert figures["sys-right"]["ranking_first"] == 1.0 and figures["sys-flawed"]["ranking_first"] == 0.0
    assert set(report["ranking"]["orders"]) == {"red-square", "two-blue-circles", "green-triangle", "yellow-bar"}
    for body in seen:
        parts = body["messages"][-1]["content"]
        assert parts[0]["type"] == "image_url" and parts[0]["image_url"]["url"].startswith("data:image/png;base64,")
        assert "sys-" not in parts[-1]["text"]  # the systems' names are never shown
        assert body["response_format"]["json_schema"]["name"] == "blind_ranking"
