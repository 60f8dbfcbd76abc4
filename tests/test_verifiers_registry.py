"""The registry: the seed's signatures, prompt rendering, and the verifier API surface."""

import pytest

import verifiers
from verifiers import REGISTRY, BadCallError, get_spec, render_specs

SEED_SIGNATURES = {
    "text_verify": ("text_verify(target: str = None, candidates: List[str] = None, use_latex: bool = False, "
                    "ignore_space: bool = False, ignore_punc: bool = False, ignore_case: bool = False, "
                    "ignore_st: bool = False)", "text_verify(predict: str)"),
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
