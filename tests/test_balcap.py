"""The balcap method end to end: a scripted judge that rules from a synthetic scene graph
(:mod:`genrm.methods.balcap.scene_judge`), in process and behind a real OpenAI-compatible endpoint on loopback;
hand-checked rewards; the length mask on the linguistic column only; the same rewards through ``genrm score``, the
reward server, TRL's reward functions (three columns from one judge call per completion) and verl's (decoupled);
failed judgements reported as failed, never as a reward."""

from __future__ import annotations

import json

import httpx
import pytest
from fake_judge import AppServer, FakeJudgeServer

from genrm.cli import main
from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods import make_method, score_instance
from genrm.methods.balcap.models import BalCapInstance
from genrm.methods.balcap.scene_judge import responder, scripted
from genrm.methods.columns import decoupled_advantages
from serving.app import create_app
from serving.settings import ServerSettings

REFERENCE = "A red car. Two dogs. A green bench."  # 11 pre-tokens
CAPTIONS = [
    "A red car. Two dogs. A green bench. A man in a hat.",  # all 4 verified, covers 3/3, 17 tokens
    "A red car. Two dogs.",  # 2/2 verified, covers 2/3, 7 tokens
    "A red car. The image evokes a calm mood. Two dogs. A green bench.",  # meta-commentary: 3/4, 18 tokens
    "A blue boat.",  # 0/1, covers 0/3, 4 tokens: rho 0.36, below the band
    "A red car. A red car. A red car. Two dogs. A green bench.",  # 2 repeats: clarity 5, coherency 7, 19 tokens
    "",  # nothing said: precision 0 (empty_precision), 0 tokens
    "A red car. Two dogs. A green bench. A man in a hat. A red car. Two dogs. A green bench.",  # 28 tokens: rho 2.5
]
W = (0.1, 0.3, 0.3)
PRECISION = [1.0, 1.0, 0.75, 0.0, 1.0, 0.0, 1.0]
RECALL = [1.0, 2 / 3, 1.0, 0.0, 1.0, 0.0, 1.0]
UNMASKED = [8 / 9, 8 / 9, 8 / 9, 8 / 9, 6 / 9, 0.0, 5 / 9]  # (mean score - 1) / 9; the empty caption is not judged
IN_BAND = [True, True, True, False, True, False, False]
LINGUISTIC = [ling if band else 0.0 for ling, band in zip(UNMASKED, IN_BAND, strict=True)]
EXPECTED = [(W[0] * p + W[1] * r + W[2] * ling) / sum(W) for p, r, ling in zip(PRECISION, RECALL, LINGUISTIC,
                                                                                 strict=True)]  # fmt: skip


def _instance(captions=CAPTIONS) -> BalCapInstance:
    return BalCapInstance(id="park", image="park.png", reference=REFERENCE, responses=list(captions))


def _score(options=None, captions=CAPTIONS, script=scripted):
    return score_instance(make_method("balcap", options=options or {}), _instance(captions),
                          Judge(ScriptedEngine(script)))  # fmt: skip


def test_the_hand_checked_rewards():
    result = _score()
    assert result.precision == pytest.approx(PRECISION) and result.recall == pytest.approx(RECALL)
    assert result.linguistic == pytest.approx(LINGUISTIC) and result.rewards == pytest.approx(EXPECTED)
    first = result.records[0]
    assert (first.assertions, first.verified, first.reference_assertions, first.covered) == (4, 4, 3, 3)
    assert (first.caption_tokens, first.reference_tokens) == (17, 11)
    assert result.records[6].length_ratio == pytest.approx(28 / 11)


def test_the_length_mask_zeroes_only_the_linguistic_column():
    masked, unmasked = _score(), _score({"length_rule": "none"})
    assert masked.precision == unmasked.precision and masked.recall == unmasked.recall
    assert unmasked.linguistic == pytest.approx(UNMASKED)
    changed = [i for i in range(len(CAPTIONS)) if masked.linguistic[i] != unmasked.linguistic[i]]
    assert changed == [3, 6]  # too short (the boat) and too long; the empty caption earns nothing either way
    assert all(masked.records[i].linguistic_unmasked == unmasked.linguistic[i] for i in range(len(CAPTIONS)))
    wide = _score({"length_low": 0.0, "length_high": 3.0})
    assert wide.linguistic == pytest.approx(UNMASKED)


def test_the_linear_rule_reports_a_penalty_and_masks_nothing():
    result = _score({"length_rule": "linear", "length_lambda": 2.0})
    assert result.linguistic == pytest.approx(UNMASKED)
    penalties = [r.length_penalty for r in result.records]
    assert penalties == pytest.approx([0, 0, 0, 2 * (0.5 - 4 / 11), 0, 2 * 0.5, 2 * (28 / 11 - 2)])
    method = make_method("balcap", options={"length_rule": "linear"})
    assert method.advantage_penalty(_score({"length_rule": "linear"}), 3) == pytest.approx(0.5 - 4 / 11)


def test_split_checks_tell_meta_commentary_from_hallucination():
    result = _score({"split_checks": True})
    assert result.precision == pytest.approx(PRECISION)
    meta, boat = result.records[2], result.records[3]
    assert (meta.assertions, meta.pointable, meta.verified) == (4, 3, 3)
    assert (boat.assertions, boat.pointable, boat.verified) == (1, 1, 0)


def test_one_request_per_caption_with_the_image_and_a_shared_prefix():
    engine = ScriptedEngine(scripted)
    score_instance(make_method("balcap"), _instance(), Judge(engine))
    requests = engine.requests
    # the empty caption holds no content word: it is not sent
    assert len(requests) == len(CAPTIONS) - 1 and {r.prompt.image for r in requests} == {"park.png"}
    assert {r.schema_name for r in requests} == {"balcap"} and len({r.prompt.system for r in requests}) == 1
    prefix = requests[0].prompt.user.split("SYNTHETIC CAPTION")[0]
    assert REFERENCE in prefix and all(r.prompt.user.startswith(prefix) for r in requests)


def test_a_failed_judgement_is_no_reward_in_any_column():
    garbled = _score(script=lambda request: "Looks good to me.")
    unjudged = [None if caption else 0.0 for caption in CAPTIONS]  # the empty caption is not judged: nothing
    assert garbled.rewards == unjudged and garbled.records[5].no_content
    assert garbled.precision == garbled.recall == garbled.linguistic == unjudged
    method = make_method("balcap")
    assert method.column_values(garbled, 0) == {"precision": None, "recall": None, "linguistic": None}
    assert method.unknown_reward(garbled, 0).retry and "unreadable" in method.unknown_reward(garbled, 0).message
    blind = score_instance(method, _instance(), Judge(ScriptedEngine(scripted, sees_images=False)))
    assert blind.rewards == unjudged and "cannot see the image" in blind.records[0].failure_reason


def test_a_blank_reference_is_refused_naming_the_field():
    from genrm.methods import MethodInputError

    method = make_method("balcap")
    with pytest.raises(MethodInputError) as raised:
        method.prepare(_instance().model_copy(update={"reference": "   "}))
    assert raised.value.loc == ("reference",)


def test_cli_server_and_trainers_agree_over_http_with_one_judge_call_per_completion(tmp_path, scene_dir):
    from policy_rl.method_reward import MethodReward
    from policy_rl.scorers import make_scorer
    from policy_rl.verl_reward import compute_score, compute_score_batch

    source = scene_dir / "in.jsonl"  # beside its images: genrm score reads them from its input's folder
    source.write_text(_instance().model_dump_json() + "\n")
    n = len(CAPTIONS)
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        spec = f"openai:fake-judge@{judge.url}"
        code = main(["score", str(source), "-o", str(tmp_path / "out.jsonl"), "--method", "balcap", "--judge", spec,
                     "-q"])  # fmt: skip
        with AppServer(create_app(ServerSettings(method="balcap", judge=spec, image_dir=scene_dir))) as server:
            scored = httpx.post(f"{server.root}/v1/score", json={"groups": [_instance().model_dump()]}).json()
            method = make_method("balcap")
            columns = MethodReward(method, make_scorer(server.root, method)).columns()
            before = len(judge.state.requests)
            instance_column = [_instance([]).model_dump_json()] * n
            completions = [[{"role": "assistant", "content": c}] for c in CAPTIONS]
            trl = [f(["Describe the image."] * n, completions, genrm_instance=instance_column) for f in columns]
            trl_calls = len(judge.state.requests) - before
        verl = compute_score_batch(["park"] * n, CAPTIONS, instance_column, [{"uid": "u"}] * n, judge=spec,
                                   method="balcap", aggregation="normalize_then_sum",
                                   image_dir=str(scene_dir))  # fmt: skip
        plain = compute_score_batch(["park"] * n, CAPTIONS, instance_column, None, judge=spec, method="balcap",
                                    image_dir=str(scene_dir))  # fmt: skip
    assert code == 0
    cli = json.loads((tmp_path / "out.jsonl").read_text())
    assert cli["rewards"] == pytest.approx(EXPECTED) and scored["groups"][0]["rewards"] == pytest.approx(EXPECTED)
    assert [f.__name__ for f in columns] == ["precision", "recall", "linguistic"]
    assert trl == [pytest.approx(PRECISION), pytest.approx(RECALL), pytest.approx(LINGUISTIC)]
    assert trl_calls == n - 1  # three columns, one judge call per completion (none for the empty caption)
    (decoupled,) = decoupled_advantages([[list(r) for r in zip(PRECISION, RECALL, LINGUISTIC, strict=True)]], list(W))
    assert [row["score"] for row in verl] == pytest.approx(decoupled)  # the advantage, as TRL forms it
    assert [row["reward"] for row in verl] == pytest.approx(EXPECTED)
    assert [row["precision"] for row in verl] == pytest.approx(PRECISION)
    assert [row["score"] for row in plain] == pytest.approx(EXPECTED)
    with pytest.raises(ValueError, match="batch reward manager"):
        compute_score("park", CAPTIONS[0], instance_column[0], judge=spec, method="balcap",
                      aggregation="normalize_then_sum")  # fmt: skip
    with pytest.raises(ValueError, match="needs a method with reward columns"):
        compute_score_batch(["x"], ["y"], ["{}"], None, aggregation="normalize_then_sum")


def test_verls_decoupled_score_is_the_c_gdpo_advantage_less_the_linear_penalty_a_group_cannot_cancel(scene_dir):
    # BalCapRL A.5: the penalty comes off the batch-normalized advantage. Two groups: one whose captions are all out
    # of the band by the same amount (a penalty shared by the group, which a group baseline would cancel), one mixed.
    from policy_rl.verl_reward import compute_score_batch

    short = ["A red car.", "A green bench.", "A blue boat."]  # 4, 4 and 4 tokens against 11: rho 4/11 each
    mixed = CAPTIONS[:4]
    texts = short + mixed
    column = _instance([]).model_dump_json()
    infos = [{"uid": "short"}] * len(short) + [{"uid": "mixed"}] * len(mixed)
    options = {"length_rule": "linear", "length_lambda": 2.0}
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        kwargs = {"judge": f"openai:fake-judge@{judge.url}", "method": "balcap", "image_dir": str(scene_dir)}
        rows = compute_score_batch(["park"] * len(texts), texts, [column] * len(texts), infos, method_options=options,
                                   aggregation="normalize_then_sum", **kwargs)  # fmt: skip
        free = compute_score_batch(["park"] * len(texts), texts, [column] * len(texts), infos,
                                   method_options={"length_rule": "none"}, aggregation="normalize_then_sum",
                                   **kwargs)  # fmt: skip
        with pytest.raises(ValueError, match="length_rule linear .*adv_estimator=genrm_cgdpo"):
            compute_score_batch(["park"], texts[:1], [column], None, method_options=options, **kwargs)
    columns = [[[row[name] for name in ("precision", "recall", "linguistic")] for row in rows[a:b]]
               for a, b in ((0, 3), (3, 7))]  # fmt: skip
    penalties = [row["length_penalty"] for row in rows]
    assert penalties[:3] == pytest.approx([2 * (0.5 - 4 / 11)] * 3) and penalties[3:] == pytest.approx(
        [0, 0, 0, 2 * (0.5 - 4 / 11)]
    )
    advantages = [a for group in decoupled_advantages(columns, list(W)) for a in group]
    assert [row["score"] for row in rows] == pytest.approx([a - p for a, p in zip(advantages, penalties,
                                                                                      strict=True)])  # fmt: skip
    # the linear rule masks nothing, so without it the columns and the advantages are the same, less no penalty
    assert [row["score"] - f["score"] for row, f in zip(rows, free, strict=True)] == pytest.approx(
        [-p for p in penalties]
    )
    assert all(row["reward"] == pytest.approx(f["reward"]) for row, f in zip(rows, free, strict=True))


def test_consumers_that_take_rewards_only_refuse_the_linear_rule_instead_of_dropping_its_penalty(
    monkeypatch, scene_dir
):
    from policy_rl import trl_rewards

    monkeypatch.setenv("GENRM_METHOD", "balcap")
    monkeypatch.setenv("GENRM_METHOD_OPTIONS", json.dumps({"length_rule": "linear"}))
    trl_rewards._method_reward.cache_clear()
    trl_rewards._columns.cache_clear()
    try:
        with pytest.raises(ValueError, match="trl grpo's reward functions cannot apply.*run genrm rl"):
            trl_rewards.reward_column_1(["p"], ["A red car."], genrm_instance=[_instance([]).model_dump_json()])
    finally:
        trl_rewards._method_reward.cache_clear()
        trl_rewards._columns.cache_clear()
    # lambda 0 penalizes nothing: nothing to refuse
    assert (
        make_method("balcap", options={"length_rule": "linear", "length_lambda": 0}).advantage_penalty_setting()
        is None
    )
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        settings = ServerSettings(method="balcap", judge=f"openai:fake-judge@{judge.url}", image_dir=scene_dir,
                                  method_options={"length_rule": "linear"})  # fmt: skip
        with AppServer(create_app(settings)) as server:
            body = {"query": ["Describe. A red car."], "prompts": ["Describe. "],
                    "labels": [_instance([]).model_dump_json()]}  # fmt: skip
            refused = httpx.post(f"{server.root}/get_reward", json=body)
            scored = httpx.post(f"{server.root}/v1/score", json={"groups": [_instance(CAPTIONS[:2]).model_dump()]})
        asked = len(judge.state.requests)
    assert refused.status_code == 409
    assert "OpenRLHF's remote reward protocol cannot apply" in refused.json()["detail"][0]["msg"]
    assert scored.status_code == 200 and asked == 2  # /v1/score (genrm rl's scorer) still serves it, penalty included
    assert "length_penalty" in scored.json()["groups"][0]["records"][0]


def test_the_openrlhf_route_gives_the_scalar_reward_and_the_columns_as_extra_logs(scene_dir):
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        settings = ServerSettings(method="balcap", judge=f"openai:fake-judge@{judge.url}", image_dir=scene_dir)
        with AppServer(create_app(settings)) as server:
            body = {"query": ["Describe. " + c for c in CAPTIONS[:2]], "prompts": ["Describe. "] * 2,
                    "labels": [_instance([]).model_dump_json()] * 2}  # fmt: skip
            answer = httpx.post(f"{server.root}/get_reward", json=body)
    assert answer.status_code == 200, answer.text
    reply = answer.json()
    assert reply["rewards"] == pytest.approx(EXPECTED[:2])
    assert reply["extra_logs"]["recall"] == pytest.approx(RECALL[:2])


def test_the_shipped_example_set_reads_and_its_images_load_for_a_vision_policy():
    from pathlib import Path

    from policy_rl.data import policy_dataset

    path = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "captions" / "captions.jsonl"
    instances = [BalCapInstance.model_validate_json(line) for line in path.read_text().splitlines()]
    assert len(instances) == 4 and all(len(i.responses) == 2 for i in instances)
    dataset = policy_dataset(path, vision=True, model=BalCapInstance)
    assert [images[0].size for images in dataset["images"]] == [(64, 64)] * 4
    assert json.loads(dataset["genrm_instance"][0])["reference"] == instances[0].reference


def test_genrm_rl_hands_the_policy_tokenizer_to_the_length_rule(tmp_path):
    method = make_method("balcap")

    class Letters:  # counts characters, so that the counter in use is plain to see
        name_or_path = "letters"

        def __call__(self, text, add_special_tokens=True):
            return {"input_ids": list(text)}

    method.count_tokens_with(Letters())
    prepared = method.prepare(_instance(["A car."]))
    assert (prepared.reference_tokens, prepared.caption_tokens) == (len(REFERENCE), [6])
    with pytest.raises(ValueError, match="length_tokenizer: cannot load"):
        make_method("balcap", options={"length_tokenizer": str(tmp_path)})  # a folder with no tokenizer in it


def test_a_tokenizer_named_in_the_options_counts_and_wins_over_the_policys(tmp_path):
    from genrm.training.tiny_model import build_tokenizer

    build_tokenizer([REFERENCE, *CAPTIONS], vocab_size=300).save_pretrained(tmp_path / "tok")
    named = make_method("balcap", options={"length_tokenizer": str(tmp_path / "tok")})
    counted = named.counter(REFERENCE)
    named.count_tokens_with(None)  # the policy's tokenizer is not taken: the options named one
    assert named.counter(REFERENCE) == counted > 0


def test_trls_command_line_reward_columns_share_one_judge_call(monkeypatch, scene_dir):
    from policy_rl import trl_rewards

    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        monkeypatch.setenv("GENRM_JUDGE", f"openai:fake-judge@{judge.url}")
        monkeypatch.setenv("GENRM_IMAGE_DIR", str(scene_dir))
        monkeypatch.setenv("GENRM_METHOD", "balcap")
        trl_rewards._method_reward.cache_clear()
        trl_rewards._columns.cache_clear()
        try:
            column = [_instance([]).model_dump_json()] * 2
            functions = (trl_rewards.reward_column_1, trl_rewards.reward_column_2, trl_rewards.reward_column_3)
            got = [f(["p"] * 2, CAPTIONS[:2], genrm_instance=column) for f in functions]
        finally:
            trl_rewards._method_reward.cache_clear()
            trl_rewards._columns.cache_clear()
        asked = len(judge.state.requests)
    assert got == [pytest.approx(PRECISION[:2]), pytest.approx(RECALL[:2]), pytest.approx(LINGUISTIC[:2])]
    assert asked == 2
