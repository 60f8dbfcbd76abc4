"""The registry: the seed's signatures, prompt rendering, and the verifier API surface."""

import pytest

import verifiers
from verifiers import run_verifier
from verifiers.registry import REGISTRY, get_spec, render_specs
from verifiers.result import BadCallError

SEED_SIGNATURES = {
    "text_verify": ("text_verify(target: str = None, candidates: List[str] = None, use_latex: bool = False, "
                    "ignore_space: bool = False, ignore_punc: bool = False, ignore_case: bool = False, "
                    "ignore_st: bool = False, char_edits: bool = False)", "text_verify(predict: str)"),
    "expr_verify": ("expr_verify(target: str)", "expr_verify(predict: str)"),
    "time_verify": ("time_verify(target: str, tformat: str)", "time_verify(predict: str, pformat: str = None)"),
    "bbox_verify": ("bbox_verify(target: List[List[int]])", "bbox_verify(predict: List[List[int]])"),
    "point_verify": ("point_verify(target: List[List[int]])", "point_verify(predict: List[List[int]])"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SEED_SIGNATURES))
def test_signatures_match_the_method(name):
    rubric, scoring = SEED_SIGNATURES[name]
    spec = get_spec(name)
    assert (spec.signature("rubric"), spec.signature("scoring")) == (rubric, scoring)


def test_list_verify_extends_the_seed_signature_with_text_options():
    rubric = get_spec("list_verify").signature("rubric")
    assert rubric.startswith("list_verify(target: List[str] = None, candidates: List[List[str]] = None")
    assert "ignore_case: bool = False" in rubric


def test_six_verifiers_are_exported():
    assert list(REGISTRY) == ["text_verify", "expr_verify", "time_verify", "list_verify", "bbox_verify",
                              "point_verify"]  # fmt: skip
    for name in REGISTRY:
        assert callable(getattr(verifiers, name))


def test_render_only_the_requested_verifiers():
    block = render_specs(["bbox_verify", "point_verify"])
    assert "bbox_verify(predict: List[List[int]])" in block and "point_verify(target" in block
    assert "text_verify" not in block and "expr_verify" not in block
    for name in REGISTRY:
        assert name in render_specs()


def test_unknown_verifier_lists_the_valid_ones():
    with pytest.raises(BadCallError, match="valid verifiers: text_verify, expr_verify"):
        render_specs(["nope"])


def test_to_dict_is_complete():
    described = get_spec("time_verify").to_dict()
    assert described["scoring_params"][1] == {"name": "pformat", "type": "str", "required": False,
                                              "help": described["scoring_params"][1]["help"]}  # fmt: skip
    assert described["usage"] and described["returns"]


def test_render_one_side():
    scoring = render_specs(["time_verify"], side="scoring")
    assert "scoring side: time_verify(predict: str, pformat: str = None)" in scoring
    assert "rubric side" not in scoring and "tformat" not in scoring
    assert "pformat: Python strptime format" in scoring  # the keywords a judge fills are explained
    rubric = render_specs(["time_verify"], side="rubric")
    assert "rubric side:  time_verify(target: str, tformat: str)" in rubric and "scoring side" not in rubric


def test_no_verifier_name_is_compared_outside_the_verifier_library():
    # What differs between verifiers is asked of the registry (kind of value, arity, empty prediction, mirrored
    # keywords, task types), so that a new verifier of a known kind needs no change elsewhere.
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = []
    for package in ("genrm", "serving", "policy_rl"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Compare):
                    continue
                operands = [node.left, *node.comparators]
                values = [o for o in operands if isinstance(o, ast.Constant)]
                values += [e for o in operands for e in getattr(o, "elts", []) if isinstance(e, ast.Constant)]
                names = [v.value for v in values if isinstance(v.value, str)]
                if any(name in REGISTRY for name in names):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not found, found


def test_the_registry_states_a_target_as_a_prediction_and_back():
    rubrics = {
        "text_verify": {"candidates": ["North Gate", "N. Gate"], "ignore_case": True},
        "expr_verify": {"target": "C"},
        "time_verify": {"target": "18:15", "tformat": "%H:%M"},
        "list_verify": {"target": ["M-30", "M-31"], "ignore_punc": True},
        "bbox_verify": {"target": [[10, 20, 200, 210]]},
        "point_verify": {"target": [[5, 6], [70, 80]]},
    }
    assert set(rubrics) == set(REGISTRY)
    for name, rubric in rubrics.items():
        spec = REGISTRY[name]
        prediction = spec.prediction_of_target(rubric)
        assert run_verifier(name, rubric, prediction).score == 1.0, name  # exactly right
        back = spec.target_of_prediction(rubric, prediction)
        assert run_verifier(name, back, prediction).score == 1.0, name
        assert all(back[k] == v for k, v in rubric.items() if k not in ("target", "candidates")), name
    assert REGISTRY["time_verify"].prediction_of_target(rubrics["time_verify"]) == {"predict": "18:15",
                                                                                    "pformat": "%H:%M"}  # fmt: skip
    # a prediction without a format keeps the rubric's
    kept = REGISTRY["time_verify"].target_of_prediction(rubrics["time_verify"], {"predict": "19:00", "pformat": None})
    assert kept == {"target": "19:00", "tformat": "%H:%M"}


def test_the_registry_says_how_values_are_written_and_shaped():
    assert REGISTRY["bbox_verify"].render_value([[1, 2, 3, 4], [5, 6, 7, 8]]) == "[1, 2, 3, 4], [5, 6, 7, 8]"
    assert REGISTRY["point_verify"].render_value([[1, 2]]) == "(1, 2)"
    assert REGISTRY["list_verify"].render_value(["a", "b"]) == "a, b"
    assert REGISTRY["expr_verify"].render_value("B") == "(B)" and REGISTRY["expr_verify"].render_value("12") == "12"
    assert (REGISTRY["bbox_verify"].arity, REGISTRY["point_verify"].arity, REGISTRY["text_verify"].arity) == (
        4,
        2,
        None,
    )
    assert [n for n, s in REGISTRY.items() if s.list_valued] == ["list_verify", "bbox_verify", "point_verify"]
