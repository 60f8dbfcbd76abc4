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
