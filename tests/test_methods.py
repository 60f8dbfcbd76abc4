"""Reward methods as plug-ins: the registry (built-in and entry-point methods), the rubric method on the interface,
and a method that is not the rubric's (tests/toy_method.py) served, scored and refused end to end over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from fake_judge import AppServer, FakeJudgeServer

from genrm.cli import main
from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods import RewardMethod, check_judge, make_method, method_names, registry, score_instance
from genrm.methods.rubric.method import RubricMethod
from serving.app import create_app
from serving.client import RewardClient
from serving.settings import ServerSettings

ROOT = Path(__file__).resolve().parents[1]


def _install_plugin(folder, monkeypatch, name, target):
    """A method installed as a plug-in is: a distribution whose metadata names ``target`` in the entry-point group."""
    dist = folder / f"genrm_{name}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: genrm-{name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{name} = {target}\n")
    monkeypatch.syspath_prepend(str(folder))
    registry._plugins.cache_clear()


@pytest.fixture
def words_plugin(tmp_path, monkeypatch):
    """The toy method installed as a plug-in."""
    _install_plugin(tmp_path, monkeypatch, "words", "toy_method:WordsMethod")
    yield
    registry._plugins.cache_clear()


def _count_words(body):
    text = body["messages"][-1]["content"]
    return json.dumps({"words": len(text.split())})


def test_the_registry_knows_the_built_in_methods_and_refuses_unknown_names_and_options():
    assert method_names()[0] == "rubric"
    method = make_method("rubric", options={"tau": 0.3})
    assert isinstance(method, RubricMethod) and isinstance(method, RewardMethod) and method.config.tau == 0.3
    with pytest.raises(ValueError, match="unknown reward method 'nope'; known: rubric"):
        make_method("nope")
    with pytest.raises(ValueError, match="the rubric method takes no option colour; it takes tau, answer_format, .*"):
        make_method("rubric", options={"colour": "red"})


def test_tau_is_the_rubric_methods_option_and_every_way_in_gives_it_there(monkeypatch):
    from genrm.choices import DEFAULT_TAU
    from genrm.methods.rubric.method import RubricOptions
    from policy_rl import trl_rewards
    from policy_rl.grpo import PolicyRLArguments, build_method
    from policy_rl.verl_reward import compute_score_batch
    from serving.server_method import make_server_method

    assert make_method("rubric").config.tau == DEFAULT_TAU
    assert make_method("rubric", options=RubricOptions(tau=0.3)).config.tau == 0.3  # a value of the model as it is
    with pytest.raises(ValueError, match="^the rubric option tau: Input should be a valid number"):
        make_method("rubric", options={"tau": "half"})
    with pytest.raises(ValueError, match="^the rubric option tau: Input should be less than 1"):
        make_method("rubric", options={"tau": 1.0})
    # the server's, genrm rl's and TRL's method options reach the method; a method without tau refuses it
    assert make_server_method(ServerSettings(method_options={"tau": 0.3})).config.tau == 0.3
    assert make_server_method(ServerSettings(method="claimdiff")).name == "claimdiff"
    with pytest.raises(ValueError, match="the claimdiff method takes no option tau"):
        make_server_method(ServerSettings(method="claimdiff", method_options={"tau": 0.3}))
    assert build_method(PolicyRLArguments(method_options='{"tau": 0.7}')).config.tau == 0.7
    monkeypatch.setenv("GENRM_METHOD_OPTIONS", '{"tau": 0.2}')
    trl_rewards._reward.cache_clear()
    try:
        assert trl_rewards._reward().method.config.tau == 0.2
    finally:
        trl_rewards._reward.cache_clear()
    # the shorthands are gone: a variable set would be ignored without a word, so it is refused, naming its place
    monkeypatch.setenv("GENRM_TAU", "0.2")
    with pytest.raises(ValueError, match="GENRM_TAU is no longer read: use the rubric method's option tau"):
        ServerSettings()
    with pytest.raises(ValueError, match="^verl's reward kwargs: tau is the rubric method's option"):
        compute_score_batch(["d"], ["x"], ["{}"], None, tau=0.3)


def test_every_method_declares_its_options_and_genrm_methods_lists_them(capsys):
    from genrm.methods.options import MethodOptions
    from genrm.methods.registry import describe_method, options_model

    for name in method_names():
        assert issubclass(options_model(name), MethodOptions)
    # a framework's own containers (verl hands OmegaConf's) are read as the JSON they stand for, all the way down
    from collections import UserDict

    nested = UserDict({"severity_weights": UserDict({"1": 1, "2": 2, "3": 3})})
    assert make_method("claimdiff", options=nested).rewards.severity_weights == {1: 1.0, 2: 2.0, 3: 3.0}
    assert make_method("rubric", options=UserDict({"tau": 0.25})).config.tau == 0.25
    rubric = {option["name"]: option for option in describe_method("rubric")["options"]}
    assert rubric["tau"] == {"name": "tau", "type": "float", "bounds": "> 0.0, < 1.0", "default": 0.5,
                             "help": "the remapping threshold (eq. 2-3)"}  # fmt: skip
    assert rubric["answer_format"]["type"] == "compact|rlr3|brief|evidence"
    assert main(["methods", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [m["name"] for m in listed] == method_names() and all(m["summary"] for m in listed)
    assert main(["methods", "--only", "rouge_l,pairwise"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("rouge_l: ") and "  (no options)" in text
    assert "  swap (bool; default true): judge each comparison in both orders" in text
    assert main(["methods", "--only", "nope"]) == 2
    assert "genrm methods: unknown method(s): nope; known: rubric" in capsys.readouterr().err


def test_the_reward_settings_are_one_model_and_every_entry_point_refuses_alike():
    from genrm.methods.settings import RewardSettings, reward_settings, reward_settings_from_env
    from policy_rl.grpo import PolicyRLArguments, build_method
    from policy_rl.verl_reward import compute_score_batch

    assert issubclass(ServerSettings, RewardSettings)
    defaults = PolicyRLArguments()
    assert (defaults.method, defaults.exposure, defaults.method_options) == ("rubric", "minimal", None)
    assert reward_settings_from_env({"GENRM_METHOD_OPTIONS": '{"tau": 0.2}'}).make().config.tau == 0.2
    for environ, message in [
        ({"GENRM_METHOD": ""}, "GENRM_METHOD: String should have at least 1 character"),
        ({"GENRM_EXPOSURE": "all"}, "GENRM_EXPOSURE: Input should be"),
        ({"GENRM_METHOD_OPTIONS": "[1]"}, "GENRM_METHOD_OPTIONS: must be a JSON object"),
    ]:
        with pytest.raises(ValueError, match=message):
            reward_settings_from_env(environ)
    with pytest.raises(ValueError, match="^exposure: Input should be"):
        build_method(PolicyRLArguments(exposure="all"))
    with pytest.raises(ValueError, match="^verl's reward kwargs: exposure: Input should be"):
        compute_score_batch(["d"], ["x"], ["{}"], None, exposure="all")
    with pytest.raises(ValueError, match="^method_options: must be a JSON object"):
        reward_settings({"method_options": "{oops"})
    assert build_method(PolicyRLArguments(method_options='{"answer_format": "brief"}')).config.answer_format == "brief"


def test_a_plug_in_is_found_through_its_entry_point(words_plugin):
    assert "words" in method_names()
    method = make_method("words", options={"tolerance": 0.5})
    assert isinstance(method, RewardMethod) and method.tolerance == 0.5
    with pytest.raises(ValueError, match="needs a judge model"):
        check_judge(method, Judge())  # no fixed-rule reader: the rule judge cannot serve it
    check_judge(make_method("rubric"), Judge())


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ("def advantage_penalty(self, result, index):\n        return 0.5",
         "has advantage_penalty but not advantage_penalty_setting: PenalizesAdvantages needs all of them"),
        ("reward_columns = {'words': 1.0}", "has reward_columns but not column_values: HasRewardColumns"),
    ],
)  # fmt: skip
def test_a_plug_in_that_half_implements_a_capability_is_refused(tmp_path, monkeypatch, members, message):
    # Without the rest, isinstance says no and the stack would drop the penalty or the columns without a word.
    module = f"half_method_{len(members)}"  # one module per case: an imported module stays in sys.modules
    source = "from toy_method import WordsMethod\n\n\nclass HalfMethod(WordsMethod):\n    name = 'half'\n\n"
    (tmp_path / f"{module}.py").write_text(source + f"    {members}\n")
    _install_plugin(tmp_path, monkeypatch, "half", f"{module}:HalfMethod")
    try:
        with pytest.raises(ValueError, match=message):
            make_method("half")
    finally:
        registry._plugins.cache_clear()


def test_a_plug_in_is_driven_like_the_rubric_method(words_plugin):
    method = make_method("words")
    instance = method.instance_model(id="w", target_words=4, responses=["one two three four", "one two", "x"])
    engine = ScriptedEngine(lambda request: json.dumps({"words": len(request.prompt.user.split())}))
    result = score_instance(method, instance, Judge(engine))
    assert result.rewards == [1.0, 0.5, 0.25] and result.exact == [1.0, 0.0, 0.0]
    assert engine.calls == 1 and all(r.schema_name == "words" for r in engine.requests)
    garbled = score_instance(method, instance, Judge(ScriptedEngine(lambda request: "four"), parse_retries=0))
    assert garbled.rewards == [None, None, None] and {r.failure for r in garbled.records} == {"not_json"}


def test_genrm_score_runs_any_method(words_plugin, tmp_path, capsys):
    lines = [{"id": "a", "target_words": 2, "responses": ["hello world", "hello"]},
             {"id": "b", "target_words": 0, "responses": ["x"]}, {"id": "c", "rubric": {}}]  # fmt: skip
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    with FakeJudgeServer() as judge:
        judge.state.responder = _count_words
        code = main(["score", str(source), "-o", str(tmp_path / "out.jsonl"), "--method", "words", "--method-options",
                     '{"tolerance": 2}', "--judge", f"openai:fake-judge@{judge.url}", "-q"])  # fmt: skip
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert code == 1  # a line failed
    assert out[0]["rewards"] == [1.0, 0.75] and out[0]["exact"] == [1.0, 0.0] and out[0]["error"] is None
    assert out[1]["error"] == "invalid target: must be a positive number of words" and out[1]["line"] == 2
    assert out[2]["error"].startswith("invalid instance: target_words: Field required")
    assert main(["score", str(source), "--method", "words", "-q"]) == 2  # rule cannot judge it
    assert "needs a judge model" in capsys.readouterr().err


def test_the_server_serves_any_method_with_its_own_models(words_plugin):
    with FakeJudgeServer() as judge:
        judge.state.responder = _count_words
        settings = ServerSettings(method="words", judge=f"openai:fake-judge@{judge.url}")
        with AppServer(create_app(settings)) as server:
            scored = httpx.post(f"{server.root}/v1/score", json={"groups": [
                {"id": "g", "target_words": 2, "responses": ["a b", "a b c d"]}]})  # fmt: skip
            refused = httpx.post(f"{server.root}/v1/score", json={"groups": [
                {"id": "g", "target_words": 2}, {"id": "h", "target_words": -1, "responses": ["a"]}]})  # fmt: skip
            label = json.dumps({"id": "q", "target_words": 3})
            body = {"query": ["P: one two three", "P: one"], "prompts": ["P: ", "P: "], "labels": [label, label]}
            openrlhf = httpx.post(f"{server.root}/get_reward", json=body)
            schema = httpx.get(f"{server.root}/openapi.json").json()
            client = RewardClient(server.root, result_model=make_method("words").result_model)
            (typed,) = client.score([{"id": "g", "target_words": 1, "responses": ["a"]}])
            client.close()
    assert scored.status_code == 200, scored.text
    assert scored.json()["groups"][0]["rewards"] == [1.0, 0.0] and scored.json()["groups"][0]["exact"] == [1.0, 0.0]
    assert refused.status_code == 422
    assert refused.json()["detail"][0] == {"loc": ["body", "groups", 1, "target_words"],
                                           "msg": "must be a positive number of words", "type": "target"}  # fmt: skip
    assert openrlhf.status_code == 200, openrlhf.text
    answer = openrlhf.json()
    assert answer["rewards"] == pytest.approx([1.0, 1 / 3]) and answer["extra_logs"]["exact"] == [1, 0]
    assert "WordsInstance" in schema["components"]["schemas"] and "Instance" not in schema["components"]["schemas"]
    assert typed.records[0].counted == 1 and typed.exact == [1.0]


def test_a_method_without_a_rule_reader_refuses_the_rule_judge_at_start(words_plugin):
    with pytest.raises(ValueError, match="the words method needs a judge model"):
        create_app(ServerSettings(method="words"))
    with pytest.raises(ValueError, match="unknown reward method"):
        create_app(ServerSettings(method="nope"))


def test_rl_rewards_take_any_method_in_process_through_the_server_and_in_verl(words_plugin):
    from policy_rl.method_reward import MethodReward
    from policy_rl.scorers import ServerScorer, make_scorer
    from policy_rl.verl_reward import compute_score_batch

    method = make_method("words")
    first, second = json.dumps({"id": "a", "target_words": 2}), json.dumps({"id": "b", "target_words": 1})
    completions = [[{"role": "assistant", "content": "a b"}], [{"role": "assistant", "content": "a"}], "x y"]
    column = [first, first, second]
    with FakeJudgeServer() as judge:
        judge.state.responder = _count_words
        spec = f"openai:fake-judge@{judge.url}"
        logged = {}
        in_process = MethodReward(method, make_scorer(spec, method))
        rewards = in_process(["p"] * 3, completions, genrm_instance=column, log_metric=logged.__setitem__)
        with AppServer(create_app(ServerSettings(method="words", judge=spec))) as server:
            scorer = make_scorer(server.root, method)
            assert isinstance(scorer, ServerScorer)
            served = MethodReward(method, scorer)(["p"] * 3, completions, genrm_instance=column)
            scorer.close()
        # verl: rows of a group found by uid wherever they are, each reward back in its row's place
        infos = [{"uid": "u2"}, {"uid": "u1"}, {"uid": "u1"}]
        verl = compute_score_batch(["d"] * 3, ["a b c", "a b", "a"], [second, first, first], infos, judge=spec,
                                   method="words", method_options={"tolerance": 2})  # fmt: skip
    assert rewards == served == [1.0, 0.5, 0.0]
    assert logged == {"words/judge_failed": 0.0, "words/reward_unknown": 0.0, "words/exact": 1 / 3}
    assert [row["score"] for row in verl] == [0.0, 1.0, 0.75]
    assert [row["exact"] for row in verl] == [0.0, 1.0, 0.0] and {row["judge_failed"] for row in verl} == {0.0}
    with pytest.raises(ValueError, match="needs a judge model"):
        make_scorer("rule", method)


def test_a_tiny_judge_is_built_on_its_methods_corpus(words_plugin, tmp_path):
    """`genrm tiny-model --method` trains the tokenizer on what that method's judge reads and writes
    (``JudgeTraining.corpus``); a method that names none gets the default method's."""
    from toy_method import judge_corpus as words_corpus
    from transformers import AutoTokenizer

    from genrm.methods.rubric.judge_corpus import judge_corpus
    from genrm.training.tiny_model import build_tokenizer

    small = ["--vocab-size", "300", "--hidden-size", "16", "--layers", "1", "--heads", "1", "--kv-heads", "1"]
    vocab = {}
    for method in ("words", "claimdiff"):
        assert main(["tiny-model", str(tmp_path / method), "--method", method, *small]) == 0
        vocab[method] = AutoTokenizer.from_pretrained(tmp_path / method).get_vocab()
    assert vocab["words"] == build_tokenizer(words_corpus(), 300).get_vocab()
    assert vocab["claimdiff"] == build_tokenizer(judge_corpus(), 300).get_vocab() != vocab["words"]
    assert main(["tiny-model", str(tmp_path / "x"), "--method", "nope"]) == 2


@pytest.mark.slow
def test_a_plug_in_labels_and_trains_its_judge_and_trains_a_policy_through_the_stage_commands(words_plugin, tmp_path):
    """The sixth method gets teacher labels, judge SFT and RLVR, and policy GRPO from the stage commands as they are
    (method-agnostic drivers over its capabilities), each run for real on tiny models."""
    from toy_method import judge_corpus as words_corpus
    from transformers import AutoTokenizer

    from genrm.training.tiny_model import TinyModelConfig, build_tokenizer

    texts = ["one two three", "a b", "just four words here", "x", "five words in this one", "two words"]
    instances = tmp_path / "words.jsonl"
    instances.write_text("".join(json.dumps({"id": f"w{i}", "prompt": f"Write {n} words.", "target_words": n,
                                             "responses": texts[i:] + texts[:i]}) + "\n"
                                 for i, n in enumerate((1, 2, 3, 4))))  # fmt: skip
    labelled, sft, rlvr, policy = (tmp_path / name for name in ("labelled", "sft", "rlvr", "policy"))
    with FakeJudgeServer() as teacher:
        teacher.state.responder = _count_words
        args = ["data", "labels", "--method", "words", str(instances), "-o", str(labelled), "--teacher",
                f"fake-judge@{teacher.url}", "--test-fraction", "0.25", "-q"]  # fmt: skip
        assert main(args) == 0
        train = [json.loads(line) for line in (labelled / "train.jsonl").read_text().splitlines()]
        assert train and all(e["words"] == len(e["response"].split()) for e in train)  # the teachers' counts
        tiny = ["--logging_steps", "1", "--plot", "false", "--method", "words", "--train_file",
                str(labelled / "train.jsonl")]  # fmt: skip
        args = ["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path",
                str(tmp_path / "base"), "--output_dir", str(sft), "--max_steps", "2", "--save_strategy", "no",
                *tiny]  # fmt: skip
        assert main(args) == 0
        # the base judge the recipe built has the tokenizer of the method's own corpus
        built = AutoTokenizer.from_pretrained(tmp_path / "base").get_vocab()
        assert built == build_tokenizer(words_corpus(), TinyModelConfig().vocab_size).get_vocab()
        losses = [e["loss"] for e in json.loads((sft / "log_history.json").read_text()) if "loss" in e]
        assert len(losses) == 2 and all(0 < loss < float("inf") for loss in losses)
        args = ["train", "rlvr", "--config", "recipes/rlvr_tiny_cpu.yaml", "--model_name_or_path", str(sft),
                "--output_dir", str(rlvr), "--max_steps", "1", "--per_device_train_batch_size", "4",
                "--num_generations", "2", "--max_completion_length", "8", *tiny]  # fmt: skip
        assert main(args) == 0
        logged = [e for e in json.loads((rlvr / "log_history.json").read_text()) if "loss" in e]
        assert logged and 0.0 <= logged[0]["rewards/count_reward_func/mean"] <= 1.0
        args = ["rl", "--config", "recipes/rl_tiny_cpu.yaml", "--method", "words", "--train_file", str(instances),
                "--model_name_or_path", str(policy), "--output_dir", str(tmp_path / "rl"), "--judge",
                f"openai:fake-judge@{teacher.url}", "--max_steps", "2", "--per_device_train_batch_size", "8",
                "--num_generations", "4", "--logging_steps", "1", "--plot", "false"]  # fmt: skip
        assert main(args) == 0
        # the prompts of TRL's own command line, in the method's instance model
        assert main(["policy-data", str(instances), "--method", "words", "-o", str(tmp_path / "data")]) == 0
        rows = [json.loads(line) for line in (tmp_path / "data" / "train.jsonl").read_text().splitlines()]
        assert [json.loads(r["genrm_instance"])["target_words"] for r in rows] == [1, 2, 3, 4]
    logged = [e for e in json.loads((tmp_path / "rl" / "log_history.json").read_text()) if "reward" in e]
    assert len(logged) == 2 and all(e["words/reward_unknown"] == 0 and e["words/judge_failed"] == 0 for e in logged)
    assert all(0.0 <= e["reward"] <= 1.0 for e in logged)


def test_a_tiny_policy_gets_the_words_of_right_answers_from_any_method(words_plugin):
    """The rubric method names its text targets (``NamesAnswerTexts``); a method that does not gives its instance's
    string fields."""
    from policy_rl.data import read_instances
    from policy_rl.grpo import _answer_words

    rubric = make_method("rubric")
    yes_no = read_instances((ROOT / "datasets" / "policy_rl" / "yes_no.jsonl").read_text().splitlines())
    assert [_answer_words(rubric, i) for i in yes_no[:2]] == [["yes"], ["no"]]
    words = make_method("words")
    instance = words.instance_model(id="w", prompt="Write two words.", target_words=2, responses=[])
    assert _answer_words(words, instance) == ["w", "Write two words."]


def test_every_option_of_a_built_in_method_is_documented():
    import re

    from genrm.methods.registry import BUILTIN, describe_method

    text = "".join((ROOT / "docs" / page).read_text(encoding="utf-8") for page in ("methods.md", "rubric.md"))
    missing = [f"{name}.{option['name']}" for name in BUILTIN for option in describe_method(name)["options"]
               if not re.search(rf"\b{option['name']}\b", text)]  # fmt: skip
    assert missing == []
