"""An audit set's abnormal responses as negative judge-training examples (``genrm data from-audit``): labelled with
the credit they deserve, with attacks and master keys held out by name, refused when the audit shares inputs with a
test split, and ready for the SFT records."""

from __future__ import annotations

import json
from pathlib import Path

from genrm.cli.main import main
from genrm.methods.rubric.evaluation.audit_set import NEGATIVE_CATEGORIES, read_audit
from genrm.methods.rubric.judge_data import JudgeExample

ROOT = Path(__file__).resolve().parents[1]
AUDIT = ROOT / "datasets" / "audit" / "synth_test.jsonl"
TEST = ROOT / "datasets" / "judge_synth" / "test.jsonl"
TRAIN = ROOT / "datasets" / "judge_synth" / "train.jsonl"


def test_abnormal_responses_become_examples_labelled_with_the_credit_they_deserve(tmp_path, capsys):
    out = tmp_path / "negatives.jsonl"
    assert main(["data", "from-audit", str(AUDIT), "-o", str(out), "--exclude", "period", "comma"]) == 0
    audit = {e.id: e for e in read_audit(AUDIT.read_text().splitlines())}
    written = [JudgeExample.model_validate_json(line) for line in out.read_text().splitlines()]
    expected = [e for e in audit.values() if e.category in NEGATIVE_CATEGORIES and e.attack not in ("period", "comma")]
    assert [e.id for e in written] == [e.id for e in expected] and all(e.source == "audit" for e in written)
    for example in written:
        assert example.labels == audit[example.id].labels and example.response == audit[example.id].response
    keys = {audit[e.id].attack for e in written if audit[e.id].category == "master_key"}
    assert keys and not keys & {"period", "comma"}
    alone = next(e for e in written if audit[e.id].category == "master_key" and e.response.strip() == ":")
    assert all(label.credit == 0 for label in alone.labels)  # a key alone deserves nothing
    assert f"wrote {len(written)} negative examples" in capsys.readouterr().out
    records = tmp_path / "sft.jsonl"
    assert main(["data", "sft", str(out), "-o", str(records)]) == 0
    assert len(records.read_text().splitlines()) == len(written)
    answer = json.loads(json.loads(records.read_text().splitlines()[written.index(alone)])["completion"][0]["content"])
    # the judge is taught to extract nothing for the verifier (which then gives 0) and to give the fuzzy criterion 0
    assert [item["credit"] for item in answer["essential"] + answer["additional"]] == ["text_verify(predict=None)", 0]


def test_an_audit_of_test_inputs_an_unknown_name_and_nothing_kept_are_refused(tmp_path, capsys):
    out = tmp_path / "negatives.jsonl"
    assert main(["data", "from-audit", str(AUDIT), "-o", str(out), "--not-in", str(TEST)]) == 2
    assert "are in" in (err := capsys.readouterr().err) and "build the audit from the training split" in err
    assert main(["data", "from-audit", str(AUDIT), "-o", str(out), "--not-in", str(TRAIN)]) == 0  # no input shared
    assert main(["data", "from-audit", str(AUDIT), "-o", str(out), "--exclude", "periodd"]) == 2
    assert "unknown category, attack or master key 'periodd'" in capsys.readouterr().err
    assert main(["data", "from-audit", str(AUDIT), "-o", str(out), "--categories", "regular"]) == 1
    assert "no abnormal response" in capsys.readouterr().err
