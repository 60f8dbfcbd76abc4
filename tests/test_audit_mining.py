"""Mining a record log for candidate attacks: the reasons, the ranking, what is skipped, and ``genrm audit mine`` on
the log of a real ``genrm serve`` process on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_judge import ServeProcess

from genrm.cli import main
from genrm.evaluation.mining import mine_records
from serving.client import RewardClient


def _line(ident: str, prompt: str, responses: list[str], rewards: list[float | None] | None) -> str:
    return json.dumps({"time": 0, "request_id": "r", "instance": {"id": ident, "prompt": prompt,
                                                                  "responses": responses},
                       "result": {"id": ident, "rewards": rewards}})  # fmt: skip


LOOP = "the answer is clear " * 12
LINES = [
    _line(
        "a",
        "What is 6 times 7?",
        [
            "Solution",
            "A long and careful explanation of six sevens, giving 42 at the end of the worked steps shown.",
            "\\boxed{41}",
            LOOP,
        ],
        [1.0, 1.0, 0.0, 0.9],
    ),
    _line(
        "b",
        "What is 84 halved?",
        ["  solution ", "Thought process:", "Halving 84 gives 42 after splitting the tens and the units apart."],
        [0.8, 0.2, 1.0],
    ),  # fmt: skip
    _line("c", "What is 40 plus 2?", ["SOLUTION", "."], [0.9, None]),
    _line("d", "Anything", ["."], None),  # the whole group failed
    '{"time": 1, "request_id": "torn", "instance": {"id": "e", "resp',  # a line torn by a kill
    "[1, 2, 3]",
]


def test_candidates_are_short_repeated_or_low_content_and_ranked_by_prompts():
    report = mine_records(LINES)
    assert (report.lines, report.unreadable, report.groups) == (6, 2, 4)
    assert (report.responses, report.unknown, report.high) == (10, 2, 6)
    top, loop = report.candidates
    # "Solution" in any case and spacing, paid under three prompts; the long answers are not candidates
    assert top.text == "Solution" and top.reasons == ["short", "repeated"] and len(top.prompts) == 3
    assert top.mean_reward == pytest.approx(0.9) and top.instances == ["a", "b", "c"]
    assert loop.text == LOOP.strip() and loop.reasons == ["low_content"] and loop.words == 48
    # "Thought process:" earned 0.2 and "." no known reward: neither is a candidate, unless 0.2 counts as high
    low = [c.text for c in mine_records(LINES, min_reward=0.1).candidates]
    assert low == ["Solution", LOOP.strip(), "Thought process:"]
    assert '| "Solution" | short, repeated | 1 | 3 | 3 | 0.900 |' in report.markdown()
    with pytest.raises(ValueError, match="min_prompts"):
        mine_records(LINES, min_prompts=1)


def test_genrm_audit_mine_on_the_log_of_a_served_judge(tmp_path, capsys):
    log = tmp_path / "records.jsonl"
    groups = []
    for ident, prompt in (("six", "What is 6 times 7?"), ("half", "What is 84 halved?"), ("sum", "What is 40 + 2?")):
        groups.append({"id": ident, "prompt": prompt, "task_type": "math",
                       "rubric": {"essential": [{"criterion": "Gives the number asked for.",
                                                 "reference": "expr_verify(target='42')", "weight": 3}]},
                       "responses": ["\\boxed{42}", f"Working it out step by step for {ident}: the result is "
                                     f"\\boxed{{42}}.", "\\boxed{41}"]})  # fmt: skip
    with (
        ServeProcess("--record-log", str(log), "--log-level", "warning") as served,
        RewardClient(served.url) as client,
    ):
        results = client.score(groups)
    assert [r.rewards[0] for r in results] == [1.0, 1.0, 1.0]
    out = tmp_path / "mined"
    assert main(["audit", "mine", str(log), "-o", str(out)]) == 0
    mined = json.loads((out / "mined.json").read_text())
    assert mined["groups"] == 3 and mined["high"] == 6
    (candidate,) = mined["candidates"]  # the bare boxed answer, paid under three prompts; not the worked ones
    assert (
        candidate["text"] == "\\boxed{42}"
        and candidate["prompts"] == 3
        and candidate["reasons"] == ["short", "repeated"]
    )
    assert "3 groups" in capsys.readouterr().out
    not_a_log = tmp_path / "other.jsonl"
    not_a_log.write_text('{"id": "x"}\n')
    assert main(["audit", "mine", str(not_a_log), "-o", str(out)]) == 2
    assert "holds no scored group" in capsys.readouterr().err
    assert main(["audit", "mine", str(tmp_path / "missing.jsonl"), "-o", str(out)]) == 2


def test_genrm_score_writes_the_record_log_the_server_writes_and_mining_reads_it(tmp_path):
    records, rewards = tmp_path / "runs" / "records.jsonl", tmp_path / "rewards.jsonl"
    bad = tmp_path / "in.jsonl"
    lines = Path("datasets/examples/reward_core.jsonl").read_text().splitlines()[:3]
    bad.write_text("\n".join([*lines, "{not json"]) + "\n")
    assert main(["score", str(bad), "-o", str(rewards), "--record-log", str(records), "-q"]) == 1  # the bad line
    logged = [json.loads(line) for line in records.read_text().splitlines()]
    assert [entry["instance"]["id"] for entry in logged] == [json.loads(line)["id"] for line in lines]
    scored = [json.loads(line) for line in rewards.read_text().splitlines()][:3]
    assert [entry["result"]["rewards"] for entry in logged] == [s["rewards"] for s in scored]
    assert set(logged[0]) == {"time", "instance", "result"}
    assert main(["audit", "mine", str(records), "-o", str(tmp_path / "mined")]) == 0
    mined = json.loads((tmp_path / "mined" / "mined.json").read_text())
    assert (mined["lines"], mined["groups"], mined["unreadable"]) == (3, 3, 0)
