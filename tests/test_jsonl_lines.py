"""JSONL is split on ``\\n`` alone: U+2028, U+2029 and U+0085 inside a record's strings are content, whatever writes
the file and whatever reads it (``str.splitlines`` cut such a record in two, and ``genrm data from-audit`` refused the
audit ``genrm audit build`` had just written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from genrm.cli.main import main
from genrm.jsonl import jsonl_lines, read_jsonl_lines

ROOT = Path(__file__).resolve().parents[1]
#: Characters ``str.splitlines`` ends a line at that JSON keeps raw inside a string.
SEPARATORS = "\u2028\u2029\u0085\x1c\x1d\x1e\x0b\x0c"


def _with_separators(text: str) -> str:
    return text.replace(" ", f" {SEPARATORS} ", 1)


def _records(path: Path) -> list[dict]:
    """Every record of ``path``, split as a JSONL reader must; each must parse."""
    return [json.loads(line) for line in read_jsonl_lines(path) if line.strip()]


@pytest.mark.parametrize("text", ['{"a": "x\u2028y"}\n{"b": "\u0085"}\n', '{"a": "x\u2028y"}\r\n{"b": "\u0085"}'])
def test_a_record_ends_at_a_newline_and_nowhere_else(text):
    assert [json.loads(line) for line in jsonl_lines(text)] == [{"a": "x\u2028y"}, {"b": "\u0085"}]
    assert len(text.splitlines()) > 2  # what the old readers did


def test_every_command_writes_and_reads_records_holding_line_separators(tmp_path, capsys):
    examples = tmp_path / "examples.jsonl"
    source = (ROOT / "datasets" / "judge_synth" / "test.jsonl").read_text(encoding="utf-8").split("\n")[:40]
    lines = []
    for line in source:
        record = json.loads(line)
        record["response"] = _with_separators(record["response"])
        record["prompt"] = _with_separators(record["prompt"])
        lines.append(json.dumps(record, ensure_ascii=False))  # raw, as the project's writers write text
    examples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert "\u2028" in examples.read_text(encoding="utf-8")

    audit, negatives, hard, answers = (tmp_path / n for n in ("audit.jsonl", "neg.jsonl", "hard.jsonl", "a.jsonl"))
    assert main(["audit", "build", str(examples), "-o", str(audit)]) == 0
    assert main(["data", "from-audit", str(audit), "-o", str(negatives)]) == 0
    assert main(["eval", str(examples), "--answers", str(answers), "-q"]) == 0
    assert main(["data", "hard", str(examples), "--answers", str(answers), "-o", str(hard)]) == 0
    records = {}
    for job in ("sft", "rlvr"):
        records[job] = tmp_path / f"{job}.jsonl"
        assert main(["data", job, str(negatives), "-o", str(records[job])]) == 0
    assert main(["audit", "run", str(audit), "-o", str(tmp_path / "run"), "--settings", "default", "-q"]) == 0

    instances = tmp_path / "instances.jsonl"
    instance = json.loads((ROOT / "datasets" / "examples" / "reward_core.jsonl").read_text().split("\n")[0])
    instance["responses"] = [_with_separators(r) for r in instance["responses"]]
    instances.write_text(json.dumps(instance, ensure_ascii=False) + "\n", encoding="utf-8")
    rewards, policy = tmp_path / "rewards.jsonl", tmp_path / "policy"
    assert main(["score", str(instances), "-o", str(rewards), "-q"]) == 0
    assert main(["policy-data", str(instances), "-o", str(policy)]) == 0
    capsys.readouterr()

    written = [audit, negatives, hard, answers, *records.values(), rewards]
    for path in written:
        assert _records(path), path  # every record parses: none was cut at a separator
    assert len(_records(answers)) == len(lines) and len(_records(rewards)) == 1
    assert all(row["rewards"] is not None for row in _records(rewards))
    # the separators reached the records as content, in the files that carry the text
    assert any(any(c in json.dumps(_records(path), ensure_ascii=False) for c in SEPARATORS)
               for path in (audit, negatives, records["sft"]))  # fmt: skip


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        ('{"id": "a", "prompt": "expr_verify(target=\\sqrt{2})"}', "a lone backslash (write it twice in JSON"),
        ('{"id": "a", "prompt": "p\tq"}', "a raw tab or line break in a string"),
        ('{"id": "a", "prompt": "What is', "the line ends before its JSON does"),
        ('{"id": "a", "prompt": "p"', "the line ends before its JSON does"),
    ],
)
def test_a_line_that_is_not_json_says_the_usual_cause_and_where(line, hint):
    from pydantic import BaseModel

    from genrm.jsonl import read_models

    class Item(BaseModel):
        id: str
        prompt: str

    with pytest.raises(ValueError, match=r"in\.jsonl line 1: invalid JSON: ") as refused:
        read_models([line], Item, "in.jsonl")
    assert hint in str(refused.value) and "column" in str(refused.value)


class _Counted:
    """A text file that remembers the most characters one read asked for."""

    def __init__(self, text: str) -> None:
        import io

        self.inner, self.most = io.StringIO(text), 0

    def readline(self, size: int = -1) -> str:
        self.most = max(self.most, size)
        assert size > 0  # never a whole line of unknown length
        return self.inner.readline(size)


def test_bounded_lines_keep_at_most_the_limit_of_a_line_in_memory_and_count_a_long_one_as_one():
    from genrm.jsonl import bounded_lines

    text = "short\n" + "x" * 1_000 + "\n\u2028tail\nlast"
    source = _Counted(text)
    lines = list(bounded_lines(source, 10))
    assert lines == ["short\n", "x" * 11, "\u2028tail\n", "last"] and source.most == 11


def test_whole_lines_cut_a_write_that_fails_back_to_the_last_whole_line(tmp_path):
    import resource

    from genrm.jsonl import WholeLines, WriteFailed

    path = tmp_path / "out.jsonl"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100, hard))  # bytes: the second line crosses it
    try:
        with WholeLines(path) as sink:
            sink.write("a" * 60 + "\n")
            with pytest.raises(WriteFailed, match=f"cannot write {path}: File too large \\(EFBIG\\)"):
                sink.write("b" * 60 + "\n")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert path.read_text() == "a" * 60 + "\n"
    with pytest.raises(WriteFailed, match="No space left on device \\(ENOSPC\\)"), WholeLines("/dev/full") as full:
        full.write("x\n")
