"""The claimdiff method end to end: a scripted judge that rules from a synthetic scene (tests/claimdiff_scene.py), in
process and behind a real OpenAI-compatible endpoint on loopback; hand-checked rewards for every mode; the same
rewards through ``genrm score``, the reward server (``/v1/score`` and the source's ``/judge``), TRL's reward function
and verl's; failed judgements reported as failed, never as a reward."""

from __future__ import annotations

import base64
import json
import math

import httpx
import pytest
from fake_judge import AppServer, FakeJudgeServer

from genrm.cli import main
from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods import MethodConfig, make_method, score_instance
from genrm.methods.claimdiff.models import ClaimDiffInstance
from genrm.methods.claimdiff.scene_judge import responder, scripted
from serving.app import create_app
from serving.settings import ServerSettings

REFERENCE = "A red car. Two dogs. A green bench."
CAPTIONS = [
    "A red car. Two dogs. A green bench. A man in a hat.",  # 1 difference: the reference leaves out the man
    "A red car. Two dogs.",  # 1 difference: the caption leaves out the bench
    "A red car. Possibly two dogs. A green bench. A man in a hat.",  # the first, with the dogs hedged
    "A blue boat. Two dogs.",  # 3 differences: a boat that is not there (major), the car and the bench left out
]
# normalized_a_only with one difference: bonus ln 2 / ln 11 = 0.289065, factor 0.7 + 0.3 * 0.289065 = 0.786720
_ONE = 0.7 + 0.3 * math.log(2) / math.log(11)
_THREE = 0.7 + 0.3 * math.log(4) / math.log(11)
EXPECTED = {
    # (A errors, B errors, differences): (0, 1, 1), (1, 0, 1), (1, 1, 2), (3, 0, 3)
    "normalized_diff": [1.0, 0.0, 0.5, 0.0],
    "raw_diff": [0.55, 0.45, 0.5, 0.35],
    "a_only": [1.0, 0.9, 0.9, 0.7],
    "judgment_based": [1.0, 0.0, 0.5, 0.0],  # judgments follow the errors; the winner moves by 0.1 (capped)
    "normalized_a_only": [
        _ONE,
        0.05 * math.exp(-0.25) * _ONE,
        0.2875 * math.exp(-0.25) * (0.7 + 0.3 * math.log(3) / math.log(11)),
        0.05 * math.exp(-0.75) * _THREE,
    ],  # fmt: skip
    # extra_info verified; missing_fact; a hedge is a contradiction the scene verifies; boat false + 2 missing
    "hall_vs_miss": [1.0, 0.0, 1.0, 0.0],
}


def _instance(captions=CAPTIONS, image="park.png") -> ClaimDiffInstance:
    return ClaimDiffInstance(id="park", image=image, reference=REFERENCE, responses=list(captions))


def _score(options=None, captions=CAPTIONS, script=scripted):
    method = make_method("claimdiff", options=options or {})
    return score_instance(method, _instance(captions), Judge(ScriptedEngine(script)))


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_every_mode_gives_the_hand_checked_rewards(mode):
    result = _score({"mode": mode})
    assert result.rewards == pytest.approx(EXPECTED[mode])
    assert result.accuracy == result.rewards and result.format == [1.0] * 4


def test_records_say_how_each_reward_came_about():
    first, second, hedged, boat = _score().records
    assert (first.differences, first.caption_a_errors, first.caption_b_errors) == (1, 0, 1)
    assert (first.judgment_a_wins, first.overall_winner, first.error_difference) == (1, "A", -1.0)
    assert second.answer.differences[0].caption_a_error.error_type == "detail_omission"
    assert (hedged.differences, hedged.caption_a_errors, hedged.hedges) == (2, 1, 1)
    assert boat.caption_a_by_severity == (0, 2, 1) and boat.failure is None


def test_a_hedged_caption_scores_below_the_same_caption_without_hedges():
    plain, _, hedged, _ = _score().rewards
    assert hedged < plain
    penalized = _score({"ambiguity_penalty": True})
    words = len(CAPTIONS[2].split())  # 14 words: 14 / 90 hedges go free
    assert penalized.rewards[2] == pytest.approx(0.5 * math.exp(-0.1 * (1 - words / 90)))
    assert penalized.rewards[0] == 1.0  # no hedge, no penalty


def test_severity_weights_from_error_types_and_from_the_judge():
    weighted = _score({"severity_weighted": True})
    # the boat: hallucination (3, 1.6) + two omissions (2, 1.25 each) over 1.6 x 3 differences
    assert weighted.rewards[3] == pytest.approx(0.5 - 0.5 * (1.6 + 2.5) / 4.8)
    judged = _score({"severity_weighted": True, "judge_severity": True})
    assert judged.rewards == pytest.approx(weighted.rewards)  # the scene judge's levels agree with the words
    assert all(r.answer.differences[0].caption_a_error.severity in (0, 2, 3) for r in judged.records)


def test_format_part_and_think_blocks():
    captions = ["<think>look</think><answer>A red car. Two dogs.</answer>", "A red car. Two dogs."]
    result = _score({"require_think": True, "format_ratio": 1.0}, captions)
    # both captions are the same (the <answer> block is cut out); only the first has the blocks the format asks for
    assert result.accuracy == [0.0, 0.0] and result.format == [1.0, 0.0] and result.rewards == [0.5, 0.0]


def test_requests_show_the_image_and_share_their_prefix():
    engine = ScriptedEngine(scripted)
    score_instance(make_method("claimdiff"), _instance(), Judge(engine))
    requests = engine.requests
    assert len(requests) == 4 and {r.prompt.image for r in requests} == {"park.png"}
    assert {r.schema_name for r in requests} == {"claimdiff"} and len({r.prompt.system for r in requests}) == 1
    prefix = requests[0].prompt.user.split("Caption A (under evaluation):\n")[0]
    pairs = zip(requests, CAPTIONS, strict=True)
    assert all(r.prompt.user.startswith(prefix) and r.prompt.user.endswith(c) for r, c in pairs)
    assert REFERENCE in prefix


def test_a_failed_judgement_is_no_reward():
    garbled = _score(script=lambda request: "The first caption is better.")
    assert garbled.rewards == [None] * 4 and garbled.accuracy == [None] * 4
    assert {r.failure for r in garbled.records} == {"unreadable"}
    method = make_method("claimdiff")
    assert method.unknown_reward(garbled, 0).retry and "unreadable" in method.unknown_reward(garbled, 0).message
    blind = score_instance(method, _instance(), Judge(ScriptedEngine(scripted, sees_images=False)))
    assert blind.rewards == [None] * 4 and "cannot see the image" in blind.records[0].failure_reason


@pytest.mark.parametrize("winner", ["Tie", "A", "B"])
def test_a_judge_that_finds_no_difference_is_read_in_either_format(winner):
    # the blocks form then holds no [DIFFERENCE n] block at all, only the winner
    blocks = _score({"answer_format": "blocks"}, script=lambda request: f"[OVERALL_WINNER]\n{winner}")
    as_json = json.dumps({"differences": [], "overall_winner": {"Tie": "tie"}.get(winner, winner)})
    json_result = _score(script=lambda request: as_json)
    assert None not in blocks.rewards
    assert blocks.rewards == json_result.rewards


def test_options_and_settings_that_mean_nothing_are_refused():
    with pytest.raises(ValueError, match="takes no option colour; it takes mode"):
        make_method("claimdiff", options={"colour": 1})
    with pytest.raises(ValueError, match="the claimdiff option answer_format: Input should be 'json' or 'blocks'"):
        make_method("claimdiff", options={"answer_format": "xml"})
    with pytest.raises(ValueError, match="the unlimited exposure means nothing"):
        make_method("claimdiff", MethodConfig(exposure="unlimited"))
    with pytest.raises(ValueError, match="the claimdiff method needs a judge model"):
        create_app(ServerSettings(method="claimdiff"))


def _payload(response: str, verifier: str = "gemini_caption_diff", **changes) -> dict:
    """A payload as the source's verl remote reward manager builds it (verl_patch/workers/reward_manager/remote.py)."""
    params = {"verifier_style": "None", "is_training": True, "step": 3, "total_steps": 10, "image_grid_thw": None,
              "image_path": ["park.png"], "query": "Describe the image.", "iou_threshold": 0.5}  # fmt: skip
    payload = {"data_source": "park", "query": "Describe the image.", "prompt": "<|user|>Describe the image.",
               "answer": "", "solution": REFERENCE, "response": response, "reward_verifier": verifier,
               "reward_verifier_parm": json.dumps(params), "fmt_ratio": 0.0, "iter": 3, "data_index": 7,
               "image_path": ["park.png"]}  # fmt: skip
    return payload | changes


@pytest.mark.parametrize("answer_format", ["json", "blocks"])
def test_cli_server_and_reward_functions_agree_over_http(tmp_path, scene_dir, answer_format):
    from policy_rl.method_reward import MethodReward
    from policy_rl.scorers import make_scorer
    from policy_rl.verl_reward import compute_score_batch

    options = {"mode": "normalized_a_only", "answer_format": answer_format}
    source = scene_dir / "in.jsonl"  # beside its images, which genrm score reads from its folder
    source.write_text(_instance().model_dump_json() + "\n")
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        spec = f"openai:fake-judge@{judge.url}"
        code = main(["score", str(source), "-o", str(tmp_path / "out.jsonl"), "--method", "claimdiff",
                     "--method-options", json.dumps(options), "--judge", spec, "-q"])  # fmt: skip
        sent = judge.state.requests[:]
        settings = ServerSettings(method="claimdiff", method_options=options, judge=spec, image_dir=scene_dir)
        with AppServer(create_app(settings)) as server:
            scored = httpx.post(f"{server.root}/v1/score", json={"groups": [_instance().model_dump()]}).json()
            greeting = httpx.get(f"{server.root}/").json()
            judged = [httpx.post(f"{server.root}/judge", json=_payload(c)).json() for c in CAPTIONS]
            served = MethodReward(make_method("claimdiff", options=options), make_scorer(server.root,
                                  make_method("claimdiff", options=options)))  # fmt: skip
            column = [_instance([]).model_dump_json()] * 4
            trl = served(["Describe the image."] * 4, [[{"role": "assistant", "content": c}] for c in CAPTIONS],
                         genrm_instance=column)  # fmt: skip
        verl = compute_score_batch(["park"] * 4, CAPTIONS, column, [{"uid": "u"}] * 4, judge=spec,
                                   method="claimdiff", method_options=options, image_dir=str(scene_dir))  # fmt: skip
    expected = pytest.approx(EXPECTED["normalized_a_only"])
    assert code == 0
    cli = json.loads((tmp_path / "out.jsonl").read_text())
    assert cli["rewards"] == expected and scored["groups"][0]["rewards"] == expected
    assert [reply["rewards"]["final_reward"] for reply in judged] == expected
    assert trl == expected and [row["score"] for row in verl] == expected
    assert greeting == {"message": "Reward Judge Server"}
    first = judged[0]["rewards"]
    assert (first["format_reward"], first["judge_failed_reward"], first["caption_b_error_count_reward"]) == (1, 0, 1)
    assert "error" not in judged[0]
    schema_sent = ["response_format" in body for body in sent]
    assert schema_sent == [answer_format == "json"] * 4
    # the CLI sends the image's bytes, never its path for the judge's host to open
    shown = "data:image/png;base64," + base64.b64encode((scene_dir / "park.png").read_bytes()).decode()
    assert sent[0]["messages"][-1]["content"][0] == {"type": "image_url", "image_url": {"url": shown}}
    # the server read the image itself: its judge was sent the file's bytes, never the client's path
    # (requests 4 to 15: /v1/score, /judge and the TRL reward's; the verl reward after them judges in process)
    served = {body["messages"][-1]["content"][0]["image_url"]["url"] for body in judge.state.requests[4:16]}
    assert served == {"data:image/png;base64," + base64.b64encode((scene_dir / "park.png").read_bytes()).decode()}


def test_the_judge_route_reports_failures_and_refuses_what_it_cannot_score(scene_dir):
    with FakeJudgeServer() as judge:
        judge.state.responder = lambda body: "no idea"
        spec = f"openai:fake-judge@{judge.url}"
        with AppServer(create_app(ServerSettings(method="claimdiff", judge=spec, image_dir=scene_dir))) as server:
            failed = httpx.post(f"{server.root}/judge", json=_payload(CAPTIONS[0])).json()
            refusals = [httpx.post(f"{server.root}/judge", json=body) for body in (
                _payload("x", verifier="gemini_caption_holistic"),
                _payload("x", image_path=None, reward_verifier_parm=json.dumps({"image_path": ["a.png", "b.png"]})),
                _payload("x", image_path=None, reward_verifier_parm="[1]"),
                _payload("x", solution="  "),
                _payload("x", image_path="p" * 10_000_001))]  # every field is bounded: a 422, never a 500  # fmt: skip
            scored = httpx.post(f"{server.root}/v1/score", json={"groups": [_instance(CAPTIONS[:1]).model_dump()]})
        opted = ServerSettings(method="claimdiff", judge=spec, judge_payload_failure_reward=0.0, image_dir=scene_dir)
        with AppServer(create_app(opted)) as server:
            zero = httpx.post(f"{server.root}/judge", json=_payload(CAPTIONS[0], fmt_ratio=1.0)).json()
    assert failed["rewards"]["accuracy_reward"] is None and failed["rewards"]["final_reward"] is None
    assert failed["rewards"]["judge_failed_reward"] == 1.0 and "unreadable" in failed["error"]
    assert failed["rewards"]["format_reward"] == 1.0  # the format part is no judgement: it is known
    assert [r.status_code for r in refusals] == [422] * 5
    details = [r.json()["detail"][0] for r in refusals]
    assert details[0]["loc"] == ["body", "reward_verifier"] and "answers gemini_caption_diff" in details[0]["msg"]
    assert details[1]["loc"] == ["body", "reward_verifier_parm", "image_path"] and "2 images" in details[1]["msg"]
    assert details[2]["msg"] == "must be a JSON object" and details[3]["loc"] == ["body", "solution"]
    assert details[4]["loc"][:2] == ["body", "image_path"]
    assert scored.json()["groups"][0]["rewards"] == [None]
    assert zero["rewards"]["accuracy_reward"] == 0.0 and zero["rewards"]["final_reward"] == 0.5
    assert zero["rewards"]["judge_failed_reward"] == 1.0 and "error" in zero


def test_the_judge_route_is_mounted_only_for_a_method_that_answers_it():
    rubric = create_app(ServerSettings()).openapi()["paths"]
    schema = create_app(ServerSettings(method="claimdiff"), Judge(ScriptedEngine(scripted))).openapi()
    assert "/judge" not in rubric and "/" not in rubric
    assert {"/judge", "/", "/v1/score", "/get_reward"} <= set(schema["paths"])
    assert {"ClaimDiffInstance", "JudgePayload"} <= set(schema["components"]["schemas"])


def test_the_shipped_example_set_reads_and_its_images_load_for_a_vision_policy():
    from pathlib import Path

    from policy_rl.data import policy_dataset

    path = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "captions" / "captions.jsonl"
    instances = [ClaimDiffInstance.model_validate_json(line) for line in path.read_text().splitlines()]
    assert len(instances) == 4 and all(len(i.responses) == 2 for i in instances)
    dataset = policy_dataset(path, vision=True, model=ClaimDiffInstance)
    assert [images[0].size for images in dataset["images"]] == [(64, 64)] * 4
    assert dataset["prompt"][0] == [{"role": "user", "content": "Describe this image in detail."}]
    assert json.loads(dataset["genrm_instance"][0])["reference"] == instances[0].reference
