"""A synthetic judge-training set that needs no teacher: inputs, rubrics, responses and labels made together.

Each input comes from one of six task families (arithmetic and multiple choice for ``expr_verify``, a sign to copy
for ``text_verify``, timetables and dates for ``time_verify``, part lists for ``list_verify``, boxes and points for
``bbox_verify`` and ``point_verify``), with a fuzzy criterion beside most verifiable ones. Its responses are written
from templates in four kinds: right, partly right, wrong, and without a final answer. Because the generator writes each
response, it knows what a judge should extract from it (the label's call) and which fuzzy criteria it meets; the
credit of a verifiable label is what the real verifier gives that call against the rubric's target.

    genrm data synthetic -o datasets/judge_synth --inputs 240 --seed 0
    genrm data synthetic -o runs/synth-10k --inputs 10000 --held-out grounding     # + test_held_out.jsonl

Thousands to tens of thousands of inputs are a matter of ``--inputs`` (the families turn, so they stay in
proportion; each input's responses are all kept before balancing). ``--held-out`` leaves whole families out of train
and test and writes them as a second, harder test split: their verifiers' calls (grounding's ``bbox_verify`` and
``point_verify``, say) never appear in training.

The output is deterministic for a seed. Values stay inside what a constrained judge can write (no quotes or
backslashes in strings; fractions as ``3/4``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from genrm.choices import SyntheticFamily
from genrm.methods.labelling import balance, split_by_input
from genrm.methods.rubric.judge_data import CriterionLabel, JudgeExample
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import plan_rubric
from verifiers import format_call, verify_call_result


@dataclass
class _Response:
    text: str
    values: dict[str, Any]  # path -> scoring-side keywords (verifiable) or credit (fuzzy)
    thought: str
    rationales: dict[str, str] = field(default_factory=dict)
    quotes: dict[str, str] = field(default_factory=dict)  # path -> the passage that earns a fuzzy credit above 0


@dataclass
class _Input:
    prompt: str
    task_type: str
    essential: list[dict[str, Any]]
    additional: list[dict[str, Any]]
    responses: list[_Response]
    image: str | None = None


def _criterion(text: str, reference: str, weight: int) -> dict[str, Any]:
    return {"criterion": text, "reference": reference, "weight": weight}


_CONTAINERS = [("crate", "crates", "bottles"), ("tray", "trays", "eggs"), ("box", "boxes", "pencils"),
               ("shelf", "shelves", "books"), ("rack", "racks", "cups")]  # fmt: skip


def _arithmetic(rng: random.Random) -> _Input:
    container, containers, item = rng.choice(_CONTAINERS)
    a, b, k = rng.randint(2, 12), rng.randint(2, 12), rng.randint(2, 9)
    per, total = a * b, a * b * k
    wrong = total + rng.choice([-a, b, 10, -1])
    prompt = (f"A {container} holds {a} rows of {b} {item}. How many {item} are there in {k} {containers}? "
              "Put the final answer in \\boxed{}.")  # fmt: skip
    step = f"Each {container} holds {a} x {b} = {per} {item}"
    responses = [
        _Response(f"{step}, so {k} {containers} hold {per} x {k} = {total}.\n\nThe answer is \\boxed{{{total}}}.",
                  {"essential[0]": {"predict": str(total)}, "additional[0]": 1.0},
                  f"The boxed answer is {total}.", {"additional[0]": "It multiplies the rows by the items per row."},
                  {"additional[0]": f"{a} x {b} = {per}"}),
        _Response(f"\\boxed{{{total}}}", {"essential[0]": {"predict": str(total)}, "additional[0]": 0.0},
                  f"Only a boxed {total}, no working.", {"additional[0]": "No working is shown."}),
        _Response(f"{step}. Adding the rest gives {wrong}. The answer is \\boxed{{{wrong}}}.",
                  {"essential[0]": {"predict": str(wrong)}, "additional[0]": 1.0},
                  f"The boxed answer is {wrong}.", {"additional[0]": f"It computes {a} x {b}."},
                  {"additional[0]": f"{a} x {b} = {per}"}),
        _Response(f"We multiply the rows by the {item} in each row, then by the number of {containers}.",
                  {"essential[0]": {"predict": None}, "additional[0]": 0.5},
                  "The response describes a method but gives no number.",
                  {"additional[0]": "It names the multiplication but does not carry it out."},
                  {"additional[0]": f"We multiply the rows by the {item} in each row"}),
    ]  # fmt: skip
    return _Input(
        prompt, "math",
        [_criterion(f"States the total number of {item}.", f"expr_verify(target='{total}')", 3)],
        [_criterion("Multiplies the rows by the items per row.", f"{a} x {b} = {per}", 1)],
        responses,
    )  # fmt: skip


_CHOICES = [
    ("Which planet is the largest in the solar system?", "Jupiter", ["Mars", "Venus", "Mercury"]),
    ("Which gas do plants take in for photosynthesis?", "carbon dioxide", ["oxygen", "helium", "argon"]),
    ("Which number is prime?", "13", ["15", "21", "27"]),
    ("Which ocean is the largest?", "Pacific", ["Atlantic", "Indian", "Arctic"]),
    ("Which metal is liquid at room temperature?", "mercury", ["iron", "copper", "zinc"]),
    ("Which shape has three sides?", "triangle", ["square", "pentagon", "hexagon"]),
    ("Which animal is a mammal?", "whale", ["shark", "trout", "eel"]),
    ("Which unit measures electric current?", "ampere", ["volt", "ohm", "watt"]),
]


def _choice(rng: random.Random) -> _Input:
    question, right, others = rng.choice(_CHOICES)
    options = [right, *others]
    rng.shuffle(options)
    letters = "ABCD"
    answer = letters[options.index(right)]
    wrong = rng.choice([letter for letter in letters if letter != answer])
    listing = " ".join(f"({letter}) {text}" for letter, text in zip(letters, options, strict=True))
    prompt = f"{question} {listing}. Answer with the option letter."
    responses = [
        _Response(f"The answer is ({answer}) {right}.", {"essential[0]": {"predict": answer}},
                  f"The response picks option {answer}."),
        _Response(f"{answer}", {"essential[0]": {"predict": answer}}, f"A bare letter {answer}."),
        _Response(f"I think it is ({wrong}) {options[letters.index(wrong)]}.", {"essential[0]": {"predict": wrong}},
                  f"The response picks option {wrong}."),
        _Response("It depends on how you read the question.", {"essential[0]": {"predict": None}},
                  "No option is chosen."),
    ]  # fmt: skip
    return _Input(
        prompt, "multiple_choice",
        [_criterion("Chooses the correct option letter.", f"expr_verify(target='{answer}')", 3)], [], responses,
    )  # fmt: skip


_SIGNS = ["Fresh Bakery", "Harbor View Cafe", "City Library", "North Gate", "Export Volume", "Green Valley Farm",
          "Station Road", "Riverside Books", "Main Street Pharmacy", "Sunset Motel", "Old Town Hall",
          "Blue Lagoon"]  # fmt: skip
_PLACES = ["above the door", "on the window", "on a wooden board", "beside the entrance"]


def _typo(rng: random.Random, text: str) -> str:
    position = rng.randrange(len(text))
    replacement = rng.choice("aeiourstln")
    changed = text[:position] + replacement + text[position + 1 :]
    return changed if changed != text else text[:-1]


def _ocr(rng: random.Random) -> _Input:
    sign, place = rng.choice(_SIGNS), rng.choice(_PLACES)
    other = rng.choice([s for s in _SIGNS if s != sign])
    typo = _typo(rng, sign)
    prompt = f"A photo shows a sign {place} that reads {sign.upper()}. What does the sign say?"
    responses = [
        _Response(f"The sign {place} says: {sign}.", {"essential[0]": {"predict": sign}, "additional[0]": 1.0},
                  f"The response copies the sign as {sign}.", {"additional[0]": "It says where the sign is."},
                  {"additional[0]": place}),
        _Response(f"It reads {typo}.", {"essential[0]": {"predict": typo}, "additional[0]": 0.0},
                  f"The response copies the sign as {typo}.", {"additional[0]": "It does not say where the sign is."}),
        _Response(f"The sign {place} reads {other}.", {"essential[0]": {"predict": other}, "additional[0]": 1.0},
                  f"The response copies the sign as {other}.", {"additional[0]": "It says where the sign is."},
                  {"additional[0]": place}),
        _Response("The sign is too blurry to read.", {"essential[0]": {"predict": None}, "additional[0]": 0.0},
                  "The response gives no text.", {"additional[0]": "No place is given."}),
    ]  # fmt: skip
    return _Input(
        prompt, "ocr",
        [_criterion("Copies the text of the sign.", f"text_verify(target='{sign}', ignore_case=True)", 3)],
        [_criterion("Says where the sign is.", place, 1)],
        responses,
    )  # fmt: skip


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]  # fmt: skip


def _twelve_hour(hour: int, minute: int) -> str:
    return f"{(hour - 1) % 12 + 1}:{minute:02d} {'AM' if hour < 12 else 'PM'}"


def _time(rng: random.Random) -> _Input:
    if rng.random() < 0.5:
        hour, minute = rng.randint(0, 23), rng.choice([0, 5, 10, 15, 20, 30, 40, 45, 50, 55])
        shifted = (hour + rng.choice([1, 2, 12])) % 24
        what = rng.choice(["last bus", "first ferry", "night train", "museum tour"])
        prompt = f"The timetable lists the {what} at {hour:02d}:{minute:02d}. When is the {what}, in 12-hour time?"
        right, wrong = _twelve_hour(hour, minute), _twelve_hour(shifted, minute)
        target, tformat, pformat, wrong_format = f"{hour:02d}:{minute:02d}", "%H:%M", "%I:%M %p", "%I:%M %p"
        criterion = f"Gives the time of the {what}."
    else:
        year, month, day = rng.randint(1990, 2030), rng.randint(1, 12), rng.randint(1, 28)
        event = rng.choice(["festival", "conference", "exhibition", "marathon"])
        prompt = f"The poster says the {event} starts on {year}-{month:02d}-{day:02d}. On which date does it start?"
        right, wrong = f"{_MONTHS[month - 1]} {day}, {year}", f"{_MONTHS[month % 12]} {day}, {year}"
        target, tformat, pformat, wrong_format = f"{year}-{month:02d}-{day:02d}", "%Y-%m-%d", "%B %d, %Y", "%B %d, %Y"
        criterion = f"Gives the start date of the {event}."
    responses = [
        _Response(f"It is at {right}." if tformat == "%H:%M" else f"It starts on {right}.",
                  {"essential[0]": {"predict": right, "pformat": pformat}}, f"The response gives {right}."),
        _Response(f"{wrong}", {"essential[0]": {"predict": wrong, "pformat": wrong_format}},
                  f"The response gives {wrong}."),
        _Response("The poster does not say clearly.", {"essential[0]": {"predict": None}},
                  "No time or date is given."),
    ]  # fmt: skip
    return _Input(prompt, "time", [_criterion(criterion, f"time_verify(target='{target}', tformat='{tformat}')", 3)],
                  [], responses)  # fmt: skip


def _parts(rng: random.Random) -> _Input:
    parts = [f"{rng.choice('ABKMRTX')}-{rng.randint(10, 99)}{rng.choice(['', 'S', 'UK', 'X'])}" for _ in range(3)]
    parts = list(dict.fromkeys(parts))
    listed = ", ".join(parts)
    prompt = f"The label on the crate lists these part numbers: {listed}. List every part number on the label."
    extra = f"Z-{rng.randint(10, 99)}"
    target = "[" + ", ".join(f"'{p}'" for p in parts) + "]"
    responses = [
        _Response(f"The part numbers are {listed}.", {"essential[0]": {"predict": parts}, "additional[0]": 1.0},
                  f"The response lists {len(parts)} part numbers.", {"additional[0]": "Every listed number appears."},
                  {"additional[0]": listed}),
        _Response(f"I see {', '.join(parts[:-1])}.", {"essential[0]": {"predict": parts[:-1]}, "additional[0]": 0.0},
                  "The response lists all but one.", {"additional[0]": "One number is missing."}),
        _Response(f"Part numbers: {listed}, {extra}.", {"essential[0]": {"predict": [*parts, extra]},
                  "additional[0]": 1.0}, "The response adds a number that is not on the label.",
                  {"additional[0]": "Every listed number appears."}, {"additional[0]": listed}),
        _Response("There are several part numbers on the label.", {"essential[0]": {"predict": None},
                  "additional[0]": 0.0}, "No part number is given.", {"additional[0]": "No number is listed."}),
    ]  # fmt: skip
    return _Input(
        prompt, "ocr", [_criterion("Lists the part numbers on the label.", f"list_verify(target={target})", 3)],
        [_criterion("Includes every part number without leaving one out.", listed, 1)], responses,
    )  # fmt: skip


_OBJECTS = [("dog", "brown"), ("car", "red"), ("bicycle", "blue"), ("umbrella", "yellow"), ("cat", "grey"),
            ("traffic light", "green"), ("kite", "orange"), ("bench", "white")]  # fmt: skip
_RGB = {"brown": (140, 80, 30), "red": (220, 30, 30), "blue": (30, 60, 220), "yellow": (240, 210, 20),
        "grey": (128, 128, 128), "green": (30, 170, 60), "orange": (250, 140, 20),
        "white": (255, 255, 255)}  # fmt: skip
_IMAGE_SIDE = 64


def _scene(box: tuple[int, int, int, int], colour: str) -> str:
    """A small picture of the object as a filled box of its colour where the rubric's target says (PNG data URI)."""
    from PIL import Image, ImageDraw

    from genrm.engine.images import png_data_uri

    image = Image.new("RGB", (_IMAGE_SIDE, _IMAGE_SIDE), (40, 40, 40))
    scaled = [round(v * (_IMAGE_SIDE - 1) / 1000) for v in box]
    ImageDraw.Draw(image).rectangle(scaled, fill=_RGB[colour])
    return png_data_uri(image)


def _box(rng: random.Random) -> tuple[int, int, int, int]:
    x1, y1 = rng.randint(0, 700), rng.randint(0, 700)
    return x1, y1, x1 + rng.randint(80, 290), y1 + rng.randint(80, 290)


def _grounding(rng: random.Random) -> _Input:
    (obj, colour), box = rng.choice(_OBJECTS), _box(rng)
    near = tuple(min(1000, max(0, v + rng.randint(-6, 6))) for v in box)
    far = _box(rng)
    if rng.random() < 0.5:
        prompt = f"In the image, locate the {obj}. Give its bounding box as [x1, y1, x2, y2] on a 0-1000 scale."
        reference, criterion = f"bbox_verify(target=[[{', '.join(map(str, box))}]])", "box"
        right, wrong = [list(near)], [list(far)]
        show = lambda b: f"[{', '.join(map(str, b[0]))}]"  # noqa: E731
    else:
        point = ((box[0] + box[2]) // 2, (box[1] + box[3]) // 2)
        prompt = f"Point to the {obj} in the image. Answer with (x, y) on a 0-1000 scale."
        reference, criterion = f"point_verify(target=[[{point[0]}, {point[1]}]])", "point"
        right, wrong = [[point[0] + rng.randint(-5, 5), point[1] + rng.randint(-5, 5)]], [[far[0], far[1]]]
        show = lambda p: f"({p[0][0]}, {p[0][1]})"  # noqa: E731
    responses = [
        _Response(f"The {colour} {obj} is at {show(right)}.", {"essential[0]": {"predict": right},
                  "additional[0]": 1.0}, f"The response gives one {criterion}.",
                  {"additional[0]": "It names the colour."}, {"additional[0]": colour}),
        _Response(f"{show(wrong)}", {"essential[0]": {"predict": wrong}, "additional[0]": 0.0},
                  f"The response gives one {criterion}.", {"additional[0]": "No colour is named."}),
        _Response(f"The {obj} is at {show(right)} and another at {show(wrong)}.",
                  {"essential[0]": {"predict": right + wrong}, "additional[0]": 0.0},
                  f"The response gives two {criterion}es." if criterion == "box" else "The response gives two points.",
                  {"additional[0]": "No colour is named."}),
        _Response(f"I cannot find the {obj}.", {"essential[0]": {"predict": None}, "additional[0]": 0.0},
                  f"No {criterion} is given.", {"additional[0]": "No colour is named."}),
    ]  # fmt: skip
    return _Input(
        prompt, "grounding", [_criterion(f"Gives the {criterion} of the {obj}.", reference, 3)],
        [_criterion(f"Names the colour of the {obj}.", colour, 1)], responses, _scene(box, colour),
    )  # fmt: skip


#: The task families' makers, keyed by :data:`genrm.choices.SYNTHETIC_FAMILIES` in its order.
FAMILIES: dict[SyntheticFamily, Callable[[random.Random], _Input]] = {
    "arithmetic": _arithmetic, "choice": _choice, "ocr": _ocr, "time": _time, "parts": _parts,
    "grounding": _grounding,
}  # fmt: skip


def _label(plan: Any, value: Any, rationale: str, quote: str | None = None) -> CriterionLabel:
    if plan.verifier is None:
        return CriterionLabel(path=plan.path, credit=float(value), rationale=rationale, quote=quote if value else None)
    # predict=None is kept: the response states no value (never the empty value, which says there is none)
    keywords = {key: item for key, item in value.items() if item is not None or key == "predict"}
    call = format_call(plan.verifier, keywords)
    if not rationale:
        found = keywords.get("predict") is not None
        rationale = "Read from the final answer." if found else "The response gives no final answer for this."
    result = verify_call_result(plan.criterion.reference, call)
    if result.status not in ("ok", "unparseable_pred"):
        raise RuntimeError(f"synthetic label {call} failed against {plan.criterion.reference}: {result.reason}")
    return CriterionLabel(path=plan.path, call=call, credit=result.score, rationale=rationale)


_ID_PREFIX = "synth-"


def synthetic_family(example_id: str) -> str | None:
    """The task family a synthetic example's id names (``synth-parts-00194-r2`` -> ``parts``), or None for an id not of
    that form (a teacher's example)."""
    if not example_id.startswith(_ID_PREFIX):
        return None
    family = example_id[len(_ID_PREFIX) :].split("-", 1)[0]
    return family if family in FAMILIES else None


def generate_examples(
    inputs: int, seed: int | str = 0, families: Sequence[str] | None = None, progress: bool = False
) -> list[JudgeExample]:
    """``inputs`` synthetic inputs (``families`` in turn, every family by default), each with all its responses as
    labelled examples. ``progress`` shows a bar over the inputs. Raises ValueError for an unknown family."""
    from tqdm import tqdm

    names = list(families) if families is not None else list(FAMILIES)
    unknown = [name for name in names if name not in FAMILIES]
    if unknown or not names:
        raise ValueError(f"unknown task family {unknown[0]!r:.40}; known: {', '.join(FAMILIES)}" if unknown
                         else "no task family to generate from")  # fmt: skip
    rng = random.Random(seed)
    examples: list[JudgeExample] = []
    for number in tqdm(range(inputs), desc="generating", unit="input", disable=not progress):
        family = names[number % len(names)]
        made = FAMILIES[family](rng)
        rubric = Rubric.model_validate({"essential": made.essential, "additional": made.additional})
        plans = plan_rubric(rubric, made.task_type)
        input_id = f"{_ID_PREFIX}{family}-{number:05d}"
        for index, response in enumerate(made.responses):
            labels = [_label(p, response.values[p.path], response.rationales.get(p.path, ""),
                             response.quotes.get(p.path)) for p in plans]  # fmt: skip
            examples.append(
                JudgeExample(
                    id=f"{input_id}-r{index}",
                    input_id=input_id,
                    prompt=made.prompt,
                    image=made.image,
                    task_type=made.task_type,
                    rubric=rubric,
                    response=response.text,
                    labels=labels,
                    thought=response.thought,
                    source="synthetic",
                )  # fmt: skip
            )
    return examples


def synthetic_splits(
    inputs: int = 240,
    seed: int = 0,
    test_fraction: float = 0.15,
    held_out: Sequence[str] = (),
    progress: bool = False,
) -> tuple[list[JudgeExample], list[JudgeExample]]:
    """The balanced synthetic set of every family but ``held_out``, split into train and test by input
    (:func:`genrm.methods.labelling.split_by_input`)."""
    families = [name for name in FAMILIES if name not in held_out]
    examples = generate_examples(inputs, seed, families, progress)
    return split_by_input(balance(examples, seed), test_fraction, seed)


def held_out_split(inputs: int, seed: int, families: Sequence[str], progress: bool = False) -> list[JudgeExample]:
    """A test split of ``inputs`` inputs of ``families`` alone (families a training set made without them has never
    seen: the harder test), balanced like the main set when it can be: a family whose every response loses some
    credit (grounding's boxes never match exactly) has no side to balance against, and is kept whole rather than
    emptied. Its own random stream, so its inputs are not the main set's."""
    return balance(generate_examples(inputs, f"{seed}-held-out", families, progress), seed)
