"""The record log: damaged lines anywhere are fenced on opening, and the file is rotated before it passes its size."""

import json

from genrm.methods.base import GroupResult
from genrm.methods.rubric.models import Instance
from serving.record_log import RecordLog, fence_damaged_lines, read_records

INSTANCE = Instance.model_validate({
    "id": "g", "prompt": "p", "responses": ["a"],
    "rubric": {"essential": [{"criterion": "c", "reference": "text_verify(target='a')", "weight": 1}]},
})  # fmt: skip
RESULT = GroupResult(id="g", rewards=[1.0])


def _line(request_id: str) -> str:
    return json.dumps({"request_id": request_id, "result": {}}) + "\n"


def test_a_damaged_line_in_the_middle_is_fenced_and_the_others_kept_in_order(tmp_path):
    log = tmp_path / "log.jsonl"
    glued = '{"request_id": "torn", "resu' + _line("glued")  # a failed write, then the next batch glued to it
    log.write_text(_line("a") + glued + "not json\n" + _line("b") + '{"tail": ', encoding="utf-8")
    moved = fence_damaged_lines(log)
    assert [e["request_id"] for e in read_records(log)] == ["a", "b"]
    assert log.read_text(encoding="utf-8") == _line("a") + _line("b")
    torn = (tmp_path / "log.jsonl.torn").read_text(encoding="utf-8").splitlines()
    assert torn == [glued.rstrip("\n"), "not json", '{"tail": '] and moved == len(glued) + 9 + 9
    assert fence_damaged_lines(log) == 0  # a whole file is left alone


def test_the_log_rotates_before_it_passes_its_size_and_keeps_so_many_files(tmp_path):
    log = tmp_path / "log.jsonl"
    records = RecordLog(log, max_bytes=2_000, keep=2)
    try:
        for k in range(20):
            records.write(f"r{k}", [INSTANCE], [RESULT])
    finally:
        records.close()
    files = [log, tmp_path / "log.jsonl.1", tmp_path / "log.jsonl.2"]
    assert all(f.stat().st_size <= 2_000 for f in files) and not (tmp_path / "log.jsonl.3").exists()
    ids = [e["request_id"] for f in reversed(files) for e in read_records(f)]
    assert ids == [f"r{k}" for k in range(20 - len(ids), 20)] and len(ids) < 20  # the newest, in order; older gone
