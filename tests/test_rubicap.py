"""The rubicap method end to end: scripted captioners, writer and judges over synthetic scenes
(:mod:`genrm.methods.rubicap.scene_judge`), in process and behind a real endpoint on loopback. Hand-checked G in both
prompt layouts, the Likert baselines, failures reported as failed; ``genrm data caption-rubrics`` counting what each
check dropped; ``genrm score``, the server, TRL's and verl's reward functions agreeing; the CapArena comparison."""

from __future__ import annotations

import json

import httpx
import pytest
from fake_judge import AppServer, FakeJudgeServer

from genrm.cli import main
from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods import MethodConfig, MethodInputError, make_method, score_instance
from genrm.methods.labelling import teachers_needed
from genrm.methods.rubicap.models import CaptionCriterion, RubiCapInstance
from genrm.methods.rubicap.scene_judge import responder, scripted
from genrm.methods.rubicap.writer import check_criteria
from serving.app import create_app
from serving.settings import ServerSettings

REFERENCE = "A red car. Two dogs. A green bench."
RUBRIC = [
    CaptionCriterion(criterion="States a red car", evaluation_rule="Pass if the caption states a red car.", weight=3),
    CaptionCriterion(criterion="States two dogs", evaluation_rule="Pass if the caption states two dogs.", weight=2),
    CaptionCriterion(criterion="States a green bench", evaluation_rule="Pass if the caption states a green bench.",
                     weight=2),
    CaptionCriterion(criterion="No boat", evaluation_rule="Pass if the caption does not state a blue boat.",
                     weight=3),
]  # fmt: skip
PRAISE = " This caption is accurate, complete and fully supported by the image."
CAPTIONS = [
    "A red car. Two dogs. A green bench.",  # every criterion: 10/10
    "A red car. A blue boat.",  # the car only: 3/10
    "Possibly a red car. Two dogs.",  # a hedge does not convey the car; dogs and no boat: 5/10
    "Two dogs. A green bench." + PRAISE,  # 7/10, praise or not
]
EXPECTED = [1.0, 0.3, 0.5, 0.7]


def _instance(captions=CAPTIONS, reference: str | None = REFERENCE) -> RubiCapInstance:
    return RubiCapInstance(id="park", image="park.png", reference=reference, rubric=RUBRIC, responses=list(captions))


def _score(options=None, captions=CAPTIONS, script=scripted, config=None, reference=REFERENCE):
    engine = ScriptedEngine(script)
    result = score_instance(make_method("rubicap", config, options or {}), _instance(captions, reference),
                            Judge(engine))  # fmt: skip
    return result, engine.requests


@pytest.mark.parametrize("layout, calls", [("per_criterion", 16), ("all_criteria", 4)])
def test_the_hand_checked_rubric_reward_in_both_layouts(layout, calls):
    result, requests = _score({"layout": layout})
    assert result.rewards == pytest.approx(EXPECTED) and len(requests) == calls
    assert result.records[1].satisfied == [1, 0, 0, 0] and result.records[1].weights == [3, 2, 2, 3]
    assert all(r.prompt.image is None for r in requests)  # the rubric judge is text-only under minimal


def test_the_criterion_comes_first_and_the_caption_last_so_a_criterions_calls_share_their_prefix():
    _, requests = _score()
    first_criterion = requests[:4]  # criterion-major: the G captions of criterion 1
    prefix = first_criterion[0].prompt.user.split("GENERATED CAPTION TO EVALUATE:")[0]
    assert "States a red car" in prefix and all(r.prompt.user.startswith(prefix) for r in first_criterion)
    assert [r.prompt.user.endswith(c) for r, c in zip(first_criterion, CAPTIONS, strict=True)] == [True] * 4
    _, together = _score({"layout": "all_criteria"})
    shared = together[0].prompt.user.split("GENERATED CAPTION TO EVALUATE:")[0]
    assert all(c.criterion in shared for c in RUBRIC) and together[3].prompt.user.startswith(shared)


def test_the_vlm_exposure_shows_the_rubric_judge_the_image():
    _, requests = _score(config=MethodConfig(exposure="vlm"))
    assert {r.prompt.image for r in requests} == {"park.png"}


def test_self_praise_scores_higher_under_reference_likert_than_under_the_rubric():
    plain, praised = "Two dogs. A green bench.", "Two dogs. A green bench." + PRAISE
    rubric, _ = _score(captions=[plain, praised])
    reference, requests = _score({"mode": "reference_likert"}, captions=[plain, praised])
    direct, _ = _score({"mode": "direct_likert"}, captions=[plain, praised])
    assert rubric.rewards == [0.7, 0.7]  # the praise moves no criterion
    assert reference.rewards == [0.7, 1.0] and direct.rewards == [0.5, 0.8]  # the Likert judges are swayed
    assert reference.rewards[1] > rubric.rewards[1]
    assert REFERENCE in requests[0].prompt.user and requests[0].prompt.image == "park.png"
    assert reference.records[1].likert == 10


def test_failed_judgements_are_no_reward():
    garbled, _ = _score(script=lambda request: "It passes.")
    assert garbled.rewards == [None] * 4 and garbled.records[0].failure == "unreadable"
    assert garbled.records[0].failure_reason.startswith("criterion 1:")

    def third_fails(request):
        return "??" if "green bench" in request.prompt.user.split("GENERATED")[0] else scripted(request)

    partial, _ = _score(script=third_fails)
    assert partial.rewards == [None] * 4 and partial.records[0].satisfied == [1, 1, None, 1]
    short, _ = _score({"layout": "all_criteria"}, script=lambda r: json.dumps({"verdicts": [{"score": 1}]}))
    assert short.rewards == [None] * 4 and "1 verdicts for 4 criteria" in short.records[0].failure_reason
    method = make_method("rubicap", options={"mode": "direct_likert"})
    blind = score_instance(method, _instance(), Judge(ScriptedEngine(scripted, sees_images=False)))
    assert blind.rewards == [None] * 4 and "cannot see the image" in blind.records[0].failure_reason


def test_inputs_and_options_that_cannot_be_scored_are_refused_naming_them():
    with pytest.raises(MethodInputError) as raised:
        make_method("rubicap", options={"mode": "reference_likert"}).prepare(_instance(reference=None))
    assert raised.value.loc == ("reference",)
    for options, message in [({"mode": "stars"}, "mode: Input should be 'rubric', 'direct_likert' or"),
                             ({"layout": "grid"}, "layout: Input should be 'per_criterion' or 'all_criteria'"),
                             ({"tau": 1}, "takes no option tau")]:  # fmt: skip
        with pytest.raises(ValueError, match=message):
            make_method("rubicap", options=options)
    with pytest.raises(ValueError, match="weight must be 1, 2 or 3"):
        CaptionCriterion(criterion="x", evaluation_rule="x", weight=2.5)
    assert CaptionCriterion(criterion="x", evaluation_rule="x", weight=2.0).weight == 2
    with pytest.raises(ValueError, match="at least 1 item"):
        RubiCapInstance(id="x", image="x.png", rubric=[])


def test_the_writers_checks_count_each_reason():
    answer = {"rubrics": [
        {"criterion": "A", "evaluation_rule": "r", "weight": 3, "student_already_met": False,
         "reference_teachers": ["Model 1", "model 2"]},
        {"criterion": "B", "evaluation_rule": "r", "weight": 2.5, "student_already_met": False,
         "reference_teachers": ["Model 1", "Model 2"]},
        {"criterion": "C", "evaluation_rule": "r", "weight": 1, "student_already_met": "True",
         "reference_teachers": ["Model 1", "Model 2"]},
        {"criterion": "D", "evaluation_rule": "r", "weight": 2, "student_already_met": "False",
         "reference_teachers": ["Model 1", "Model 1", "Model 9"]},  # one teacher, counted once; Model 9 is no one
        {"criterion": "a", "evaluation_rule": "r", "weight": 2, "student_already_met": False,
         "reference_teachers": ["1", "3"]},
        {"criterion": "", "evaluation_rule": "r", "weight": 2},
        "not an object",
    ]}  # fmt: skip
    kept, dropped = check_criteria("```json\n" + json.dumps(answer) + "\n```", teachers=3, needed=2)
    assert [c.criterion for c in kept] == ["A"]
    assert dropped == {"weight": 1, "student_met": 1, "consensus": 1, "duplicate": 1, "malformed": 2}
    assert check_criteria("no rubric here", 3, 2) is None
    with pytest.raises(ValueError, match="between 1 and the number of teachers"):
        teachers_needed(4, 3, 2)
    with pytest.raises(ValueError, match="at least one teacher"):
        teachers_needed(None, 0, 1)


def _images(tmp_path):
    from genrm.methods.scene_images import SCENES, write_scene_images

    write_scene_images(tmp_path, SCENES)  # beside the list: the command reads them from its folder
    path = tmp_path / "images.jsonl"
    path.write_text('{"id": "park", "image": "park.png"}\n{"id": "kitchen", "image": "kitchen.png"}\n')
    return path


def test_genrm_data_caption_rubrics_over_http(tmp_path, capsys):
    images = _images(tmp_path)
    with FakeJudgeServer() as server:
        server.state.responder = responder
        url = server.url
        args = [
            "data",
            "caption-rubrics",
            str(images),
            "-o",
            str(tmp_path / "rubrics.jsonl"),
            "-q",
            *(x for k in (1, 2, 3) for x in ("--captioner", f"captioner-{k}@{url}")),
            "--student",
            f"student@{url}",
            "--writer",
            f"writer@{url}",
            "--report",
            str(tmp_path / "r.json"),
        ]
        assert main(args) == 0
        strict = main([*args[:4], str(tmp_path / "strict.jsonl"), *args[5:-2], "--report", str(tmp_path / "s.json"),
                       "--min-teachers", "3"])  # fmt: skip
        asked = [body["model"] for body in server.state.requests]
    assert strict == 0
    report = json.loads((tmp_path / "r.json").read_text())
    # park (facts: bench, man, car, dogs): each captioner leaves one out; the student says the bench and a boat.
    # The writer proposes bench (3 teachers; the student has it), man, car, dogs (2 each), no boat (3), polish (1.5).
    assert report["proposed"] == 6 + 5 and report["kept"] == 4 + 3 and report["written"] == 2
    assert report["dropped"] == {"malformed": 0, "weight": 2, "student_met": 2, "consensus": 0, "duplicate": 0,
                                 "over_limit": 0}  # fmt: skip
    strict_report = json.loads((tmp_path / "s.json").read_text())
    assert strict_report["dropped"]["consensus"] == 3 + 2 and strict_report["kept"] == 2  # only "no boat" survives
    park, kitchen = (RubiCapInstance.model_validate_json(line) for line in (tmp_path / "rubrics.jsonl").open())
    assert [c.criterion for c in park.rubric] == ["States a man in a hat", "States a red car", "States two dogs",
                                                  "Does not state a blue boat"]  # fmt: skip
    assert [c.weight for c in park.rubric] == [
        2,
        2,
        2,
        3,
    ] and park.reference == "A green bench. A man in a hat. A red car."
    assert sorted(set(asked)) == ["captioner-1", "captioner-2", "captioner-3", "student", "writer"]
    assert "| dropped: student_met | 2 |" in capsys.readouterr().out


def test_cli_server_and_trainers_agree_over_http(tmp_path, scene_dir):
    from policy_rl.method_reward import MethodReward
    from policy_rl.scorers import make_scorer
    from policy_rl.verl_reward import compute_score_batch

    source = tmp_path / "in.jsonl"
    source.write_text(_instance().model_dump_json() + "\n")
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        spec = f"openai:judge@{judge.url}"
        code = main(["score", str(source), "-o", str(tmp_path / "out.jsonl"), "--method", "rubicap", "--judge", spec,
                     "-q"])  # fmt: skip
        with AppServer(create_app(ServerSettings(method="rubicap", judge=spec, image_dir=scene_dir))) as server:
            scored = httpx.post(f"{server.root}/v1/score", json={"groups": [_instance().model_dump()]}).json()
            method = make_method("rubicap")
            column = [_instance([]).model_dump_json()] * 4
            trl = MethodReward(method, make_scorer(server.root, method))(["p"] * 4, CAPTIONS, genrm_instance=column)
        verl = compute_score_batch(["park"] * 4, CAPTIONS, column, None, judge=spec, method="rubicap")
    assert code == 0
    assert json.loads((tmp_path / "out.jsonl").read_text())["rewards"] == pytest.approx(EXPECTED)
    assert scored["groups"][0]["rewards"] == pytest.approx(EXPECTED)
    assert trl == pytest.approx(EXPECTED) and [r["score"] for r in verl] == pytest.approx(EXPECTED)
    assert verl[0]["criteria_met"] == 1.0


def test_caparena_counts_wins_ties_and_failures_with_positions_randomised(tmp_path):
    from genrm.evaluation.caparena import ArenaCaptions, compare_files

    good = [ArenaCaptions(id=f"i{n}", image="park.png", responses=["A red car. Two dogs. A green bench."])
            for n in range(20)]  # fmt: skip
    weak = [g.model_copy(update={"responses": ["A red car. A blue boat."]}) for g in good]
    tied = [g.model_copy(update={"responses": ["Two dogs. A red car. A green bench."]}) for g in good]
    judge = Judge(ScriptedEngine(scripted))
    report = compare_files(good, weak + [ArenaCaptions(id="extra", image="x.png", responses=["x"])], judge)
    figures = report.figures()
    assert (figures["wins"], figures["losses"], figures["ties"], figures["unmatched"]) == (20, 0, 0, 1)
    assert figures["win_rate"] == 1.0 and figures["win_lose_rate"] == 1.0
    shown_first = sum(c.first_shown_first for c in report.comparisons)
    assert 0 < shown_first < 20 and figures["chose_shown_first"] == pytest.approx(shown_first / 20)
    even = compare_files(good, tied, judge).figures()
    assert even["ties"] == 20 and even["win_rate"] == 0.5 and even["chose_shown_first"] is None
    with pytest.raises(ValueError, match="needs a judge model that sees images"):
        compare_files(good, weak, Judge(ScriptedEngine(scripted, sees_images=False)))
    failed = compare_files(good[:2], weak[:2], Judge(ScriptedEngine(lambda r: "A is better"), parse_retries=0))
    assert failed.figures()["failed"] == 2 and failed.figures()["win_rate"] is None


def test_genrm_captions_arena_and_the_rubicap_audit_over_http(tmp_path):
    from genrm.methods.scene_images import SCENES, write_scene_images

    write_scene_images(tmp_path, SCENES)  # beside the files: the commands read images from their folder
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(_instance(["Two dogs. A green bench."]).model_dump_json() + "\n")  # room left for praise
    second.write_text(_instance(CAPTIONS[1:2]).model_dump_json() + "\n")
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        spec = f"openai:judge@{judge.url}"
        arena = main(["captions", "arena", str(first), str(second), "--judge", spec, "--names", "tuned,base", "-o",
                      str(tmp_path / "arena")])  # fmt: skip
        audit = main(["audit", "captions", str(first), "--method", "rubicap", "--judge", spec, "-o",
                      str(tmp_path / "audit"), "-q"])  # fmt: skip
    assert (arena, audit) == (0, 0)
    figures = json.loads((tmp_path / "arena" / "arena.json").read_text())["figures"]
    assert figures["wins"] == 1 and figures["judged"] == 1
    rates = json.loads((tmp_path / "audit" / "caption_audit.json").read_text())["rates"]
    # the rubric reward does not rise for self-praise; both Likert judges do
    assert rates["rubric"]["self_praise"]["rises"] == 0
    assert rates["direct_likert"]["self_praise"]["rises"] == rates["reference_likert"]["self_praise"]["rises"] == 1


def test_genrm_captions_arena_with_nothing_to_compare_exits_1_saying_why(tmp_path, capsys):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(_instance(CAPTIONS[:1]).model_dump_json() + "\n")
    second.write_text(_instance(CAPTIONS[1:2]).model_copy(update={"id": "other"}).model_dump_json() + "\n")
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        code = main(["captions", "arena", str(first), str(second), "--judge", f"openai:judge@{judge.url}"])
    assert code == 1
    assert "nothing could be judged" in capsys.readouterr().err
    assert judge.state.requests == []


def test_the_shipped_rubric_set_reads_and_its_images_load_for_a_vision_policy():
    from pathlib import Path

    from policy_rl.data import policy_dataset

    path = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "captions" / "rubrics.jsonl"
    instances = [RubiCapInstance.model_validate_json(line) for line in path.read_text().splitlines()]
    assert len(instances) == 4 and all(len(i.responses) == 2 and i.reference for i in instances)
    dataset = policy_dataset(path, vision=True, model=RubiCapInstance)
    assert [images[0].size for images in dataset["images"]] == [(64, 64)] * 4
