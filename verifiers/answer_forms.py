"""Answer forms people and policies write around a value, read down to the value before it is compared.

Each rule is narrow on purpose: it fires only on the form it names, so that an expression that merely looks alike is
left to the comparison as written.

- **A short final-answer phrase** without a box: ``Therefore the answer is +7``, ``Answer: 2x + 3`` are ``+7``,
  ``2x + 3`` (what follows the last "answer is" or "answer:" on its line; boxes are left to the parser).
- **Currency**: ``\\$10``, ``$10`` (a lone dollar sign, not a math delimiter), ``€5``, ``£5``, ``¥5``, ``US$5``.
- **A unit after a number**: ``10 weeks``, ``42 dollars``, ``10 square units``, ``10cm^2``, ``10\\text{ cm}^2``,
  ``5\\,\\mathrm{m/s}``. A unit is up to three words of letters, or one of the usual abbreviations with an optional
  power or ``/`` unit; a one-letter abbreviation (``m``, ``s``, ``g``) needs a space or a ``\\text{}`` so that ``10m``
  stays a product. Only a value with no letters of its own is read this way (``2x cm`` is not). When both sides carry
  units and the units differ, the unit rule steps aside (``10 cm`` against ``0.1 m`` is compared as written).
- **A unit in text after any value**: ``2\\sqrt{3}\\text{ cm}``, ``\\frac{\\pi}{2}\\,\\mathrm{rad}`` (a unit in a text
  wrapper is a unit, whatever comes before it), with the same rule for units on both sides.
- **A named quantity**: an equation whose left side only names what the right side gives is its right side:
  ``f(x) = 2x + 3``, ``P(A) = 0.3``, ``\\text{area} = 12``, ``any text = 12``. A left side of one or two letters
  (``y = 2x + 3``, ``xy = 6``) is an equation and stays one. When both sides name a function at its arguments and the
  arguments differ, they state different quantities (``f(2) = 5`` is not ``f(3) = 5``).
- **Unicode mathematics** (:func:`unicode_math`): ``5²`` is ``5^{2}``, ``x₁`` is ``x_{1}``, ``1½`` is ``1 1/2``, a dash
  between two values is a range (``3–5``: two values), another dash a minus sign (``–5``).
- **Digit groups in LaTeX**: ``11,\\!111,\\!100`` is ``11111100``.
- **Degrees inside a trigonometric function**: ``\\sin(90^\\circ - x)`` is ``\\sin(\\frac{90\\pi}{180} - x)``, so that
  the identity holds; a bare ``30^\\circ`` is left alone (a degree answer matches its number).
- **Option letters in a font or with their text** (as the target too): ``\\mathcal{B}``, ``\\textbf{A}``,
  ``\\text{(C)}``, ``C. x = 42``.

What changes a value is never dropped (:func:`qualifiers`): a relation before it with nothing on its left
(``\\geq 5``, ``< 5``, ``\\neq 5``: Math-Verify alone reads each as ``5``) and words after it that change it, a
scale, a bound, a negation or an operation (``3\\text{ million}``, ``3\\text{ or more}``, ``2\\text{ squared}``,
``5 or more``, ``5+``: Math-Verify alone drops them as if they were units, or reads past them). Both sides must
state the same ones, or they differ whatever their values. Percent in text (``5\\text{ percent}``, ``5 percent``) is
a percent sign.

A side written as a sentence is read down to its value by :mod:`verifiers.sentences`.
"""

from __future__ import annotations

import re
import unicodedata

_ANSWER_MARK = re.compile(r"answer\s*(?:is\b|:)", re.IGNORECASE)
_BOXED = "\\boxed"

_CURRENCY = re.compile(r"^\s*([+-]?)\s*(?:\\\$|\\\\\$|US\$|\$|€|£|¥|\\euro\b|\\pounds\b)\s*(?=[\d.])")
_CURRENCY_AFTER = re.compile(r"(?<=\d)\s*(?:€|£|¥|\\\$|\$)\s*$")
TEXT_WRAPPER = re.compile(r"\\(?:text|textrm|mathrm|mbox|operatorname|textnormal|mathit|textit)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\[,;:! ]|\\quad|\\qquad|~")
_POWER = r"(?:\s*\^\s*(?:\{\s*[23]\s*\}|[23]))?"
_SHORT_UNITS = (
    "mm|cm|km|dm|nm|um|kg|mg|ms|ns|min|hr|hrs|mL|ml|kL|ft|yd|mi|in|lb|lbs|oz|mph|kph|km/h|m/s|cm/s|km/hr|sq|cu|"
    "kWh|kW|MW|Hz|kHz|MHz|GHz|kJ|J|N|Pa|kPa|atm|mol|V|W|A|K|L|m|s|g|h|l"
)
UNIT_ABBREVIATION = re.compile(rf"^(?:(?:{_SHORT_UNITS}){_POWER})(?:\s*/\s*(?:{_SHORT_UNITS}){_POWER})?$")
# LaTeX commands that write a unit (degrees, angstroms, ohms); any other command is mathematics
_UNIT_COMMANDS = frozenset({"\\degree", "\\AA", "\\ohm"})
# words after a number that bound, negate or scale it, besides those of _NOT_UNITS: never its unit (5 never, 5 max)
_NOT_UNIT_WORDS = frozenset(
    "no not never none negative minimum maximum min max least most double twice triple over under above below beyond "
    "within between except excluding".split()
)
_UNIT_WORDS = re.compile(r"^[A-Za-z]{2,}(?:[\s-]+[A-Za-z]{2,}){0,2}\.?$")
# Words after a number that are mathematics, not a unit: a product with pi, a root, a logarithm, a connective.
_NOT_UNITS = frozenset(
    "pi sqrt sin cos tan sec csc cot log ln exp and or not to times cdot over plus minus mod infty infinity "
    "alpha beta gamma delta theta lambda mu sigma omega phi psi rho tau epsilon "
    # words that change the number they follow: 10 factorial, 2 squared, 5 million, 2 thirds
    "factorial squared cubed root roots power powers inverse less more than divided half halves third thirds quarter "
    "quarters fourth fourths fifth fifths sixth sixths seventh sevenths eighth eighths ninth ninths tenth tenths "
    "hundred hundreds thousand thousands million millions billion billions trillion trillions dozen dozens "
    "hundredth hundredths thousandth thousandths percent".split()
)
_NUMBER_PART = re.compile(
    r"^(?P<value>[+-]?(?:\d[\d,\s]*(?:\.\d*)?|\.\d+)(?:\s*(?:\\times|\\cdot)\s*10\s*\^\s*\{?[+-]?\d+\}?)?"
    r"(?:\s*\\?%)?|[+-]?\\[dt]?frac\s*\{\s*\d+\s*\}\s*\{\s*\d+\s*\})"
    r"\s*(?P<unit>.*)$",
    re.DOTALL,
)

_NAMED_EQUATION = re.compile(
    r"^\s*(?P<name>[A-Za-z](?:_\{?\w+\}?)?'*\s*\([^()=]{0,40}\)"  # f(x), P(A), h_1(t)
    r"|\\(?:text|mathrm|textrm|operatorname)\s*\{[^{}=]{1,60}\}"  # \text{area}
    r"|[A-Za-z]{3,}(?:\s+[A-Za-z]+){0,6}"  # area, any text
    r"|[A-Za-z]{1,2}(?:\s+[A-Za-z]+){1,6})"  # the area
    r"\s*=\s*(?P<value>[^=<>]+?)\s*$"
)
_LATEX_WORDS = re.compile(r"\\[A-Za-z]+")
_APPLIED = re.compile(r"^\s*(?P<head>[A-Za-z](?:_\{?\w+\}?)?'*)\s*\((?P<arguments>[^()=]*)\)\s*$")

# a relation that opens a side with nothing on its left: what follows is a bound, not the value
_RELATIONS = {
    "<": "<", "\\lt": "<", ">": ">", "\\gt": ">", "\\nless": "not <", "\\ngtr": "not >",
    "\\le": "≤", "\\leq": "≤", "\\leqslant": "≤", "≤": "≤", "\\ge": "≥", "\\geq": "≥", "\\geqslant": "≥", "≥": "≥",
    "\\ne": "≠", "\\neq": "≠", "≠": "≠", "\\neg": "not", "\\lnot": "not", "¬": "not",
}  # fmt: skip
# Logical connectives written in LaTeX: Math-Verify reads "5 \lor 6" as 6; in words it reads a set of both
_OPENING_EQUALS = re.compile(r"^\s*=\s*(?=\S)")
_CONNECTIVES = re.compile(r"\\(?:lor|vee)(?![A-Za-z])|∨")
_CONJUNCTIVES = re.compile(r"\\(?:land|wedge)(?![A-Za-z])|∧")
_OPENING_RELATION = re.compile(
    r"^\s*(" + "|".join(re.escape(r) for r in sorted(_RELATIONS, key=len, reverse=True)) + r")(?![A-Za-z])\s*"
)
# a text group that closes a side (with a power of it: \text{cm}^2), after a value
_CLOSING_TEXT = re.compile(
    r"^(?P<value>.*?[\w)}\]!%.'])(?:\\[,;:! ]|\\quad|~|\s)*"
    r"\\(?:text|textrm|textnormal|textbf|textit|mathrm|mathit|mathbf|mbox|operatorname)\s*\{(?P<words>[^{}]*)\}"
    rf"(?P<power>{_POWER})\s*$",
    re.DOTALL,
)
# words that are not a unit but say something of the value before them: a scale, a bound, a negation, an operation
# (last, a few count things: "2 times" is twice, "2 roots" two roots)
_VALUE_WORDS = (_NOT_UNITS - {"times", "roots", "powers"}) | frozenset(
    "fewer least most above below under except excluding never maximum minimum max min".split()
)
# plain words that close a side after a number or a bracket (5 or more, 5less), and a closing plus (5+, not 3^{2+})
_CLOSING_WORDS = re.compile(r"^(?P<value>.*?[\d)}\]%])\s*(?P<words>[A-Za-z]+(?:[\s-]+[A-Za-z]+)*)\s*\.?$", re.DOTALL)
_CLOSING_PLUS = re.compile(r"^(?P<value>.*?[\d)\]])\s*\+$", re.DOTALL)
_PERCENT_TEXT = re.compile(r"\s*\\text\s*\{\s*percent\s*\}\s*$")
# "5 percent" in a sentence is 5% (Math-Verify rewrites it too, but only where it reads the whole side)
_PERCENT_WORD = re.compile(r"(?<=\d)\s*(?:percent|per\s+cent|pct)\b", re.IGNORECASE)

_TRIG = re.compile(r"\\(?:sin|cos|tan|sec|csc|cot)\b")
_DEGREES = re.compile(r"(\d+(?:\.\d+)?)\s*\^\s*(?:\{\s*\\circ\s*\}|\\circ)")

_DIGIT_GROUP = re.compile(r"(?<=\d),\\!\s*(?=\d{3}(?!\d))")
_FONT_LETTER = re.compile(
    r"^\s*\\(?:mathcal|mathbf|mathrm|textbf|text|mathit|textit|mathsf|mathbb|mathscr|mathfrak|boxed|textrm)\s*"
    r"\{\s*([\(\[]?\s*[A-Za-z]\s*[\)\]]?\.?)\s*\}\s*$"
)
_ANOTHER_OPTION = re.compile(r"\(\s*[A-Z]\s*\)|\b(?i:or|and|maybe|perhaps|possibly|probably)\s+\(?[A-Z]\b(?![a-z'])")
_LEADING_OPTION_TEXT = re.compile(r"^\s*(?:\(\s*([A-Z])\s*\)|([A-Z])\s*[.)])\s+\S")


def stated_answer(text: str) -> str | None:
    """What follows the last "answer is" or "answer:" of ``text``, up to the end of that line (a sentence's period
    dropped); None when it has no such mark, or nothing follows it."""
    marks = list(_ANSWER_MARK.finditer(text))
    if not marks:
        return None
    line = text[marks[-1].end() :].strip().split("\n", 1)[0].strip().rstrip(".").strip()
    return line or None


def answer_phrase(text: str) -> str:
    """The value a short phrase states (see the module docstring), or ``text`` when it states none."""
    if _BOXED in text:
        return text  # boxes are read by the parser, which knows what several of them mean
    return stated_answer(text) or text


def without_currency(text: str) -> str:
    """``text`` without a currency sign before its number (``\\$10`` is ``10``) or after it (``1,000.99€``)."""
    if text.count("$") > 1 and not text.lstrip().startswith(("\\$", "US$")):
        return text  # "$10$" is a math span, not ten dollars
    return _CURRENCY_AFTER.sub("", _CURRENCY.sub(lambda m: m.group(1), text, count=1), count=1)


def unit_text(unit: str) -> str | None:
    """The unit ``unit`` names, normalised (lower case, no wrappers or spaces), or None when it is not a unit."""
    unit = _SPACING.sub(" ", unit).strip()
    unit = TEXT_WRAPPER.sub(lambda m: " " + m.group(1) + " ", unit).replace("{", "").replace("}", "")
    if any(command not in _UNIT_COMMANDS for command in _LATEX_WORDS.findall(unit)):
        return None  # a LaTeX command outside a text group is mathematics (5 \pm, 5 \in), not a unit
    unit = unit.replace("\\", "").strip().rstrip(".").strip()
    if not unit:
        return None
    if UNIT_ABBREVIATION.match(unit.replace(" ", "")):
        return unit.replace(" ", "")
    if _UNIT_WORDS.match(unit):
        words = unit.lower().rstrip(".").replace("-", " ").split()
        if any(word in _NOT_UNITS or word in _NOT_UNIT_WORDS for word in words):
            return None
        return " ".join(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words)
    return None


def _closing_text(text: str) -> tuple[str, str, str] | None:
    """``(value, words, power)`` when ``text`` ends with a text group after a value, else None."""
    match = _CLOSING_TEXT.match(text.strip())
    if match is None or not match.group("words").strip():
        return None
    return match.group("value").strip(), match.group("words"), match.group("power")


def qualifiers(text: str) -> tuple[str, tuple[str, str]]:
    """``(value, (relation, words))``: ``text`` without a relation that opens it with nothing on its left
    (``\\geq 5``; the relation normalised, ``\\ge`` and ``\\geq`` alike) and without words after it, in text or plain,
    that change the value (``3\\text{ million}``, ``5 or more``; lower case, single spaces; a closing ``+`` is
    ``or more``), and what they were ("" for none). Two sides compare equal only when they state the same ones (see
    the module docstring)."""
    relation, words = "", ""
    opening = _OPENING_RELATION.match(text)
    rest = text[opening.end() :] if opening else text
    if opening and rest.strip() and "<" not in rest and ">" not in rest:  # <1, 2> is a vector, not a bound
        relation, text = _RELATIONS[opening.group(1)], rest
    closing = _closing_text(text)
    plain_words = _CLOSING_WORDS.match(text.strip()) if closing is None else None
    if closing is not None or plain_words is not None:
        value, said = (closing[0], closing[1]) if closing is not None else plain_words.group("value", "words")
        plain = [w for w in re.split(r"[^a-z]+", said.lower()) if w]
        if any(word in _VALUE_WORDS for word in plain) and plain != ["percent"]:
            words, text = " ".join(plain), value.strip()
    elif (plus := _CLOSING_PLUS.match(text.strip())) is not None:
        words, text = "or more", plus.group("value")
    return text, (relation, words)


def split_unit(text: str) -> tuple[str, str | None]:
    """``(value, unit)`` for a number followed by a unit, or any value followed by a unit in text (see the module
    docstring), else ``(text, None)``."""
    match = _NUMBER_PART.match(text.strip())
    if match is not None and match.group("unit"):
        value, rest = match.group("value"), match.group("unit")
        # a space before the unit: inside the value (5 m: the digits take it), or between them (3.5 m)
        spaced = value != value.rstrip() or match.start("unit") > match.end("value") or rest.startswith("\\")
        unit = unit_text(rest)
        if unit is not None and (len(unit) > 1 or spaced):
            return value.strip(), unit
    closing = _closing_text(text)
    if closing is not None and (unit := unit_text(closing[1] + closing[2])) is not None:
        return closing[0], unit
    return text, None


def named_parts(text: str) -> tuple[str | None, str]:
    """``(name, value)`` for an equation whose left side only names its right side (see the module docstring), else
    ``(None, text)``."""
    if text.count("=") != 1:
        return None, text
    match = _NAMED_EQUATION.match(text)
    if match is None:
        return None, text
    name = match.group("name")
    if not name.startswith("\\") and "(" not in name:
        words = _LATEX_WORDS.sub("", name).split()
        if any(word.lower() in _NOT_UNITS for word in words):
            return None, text
    return name.strip(), match.group("value")


def named_value(text: str) -> str:
    """The right side of an equation whose left side only names it (see the module docstring), else ``text``."""
    return named_parts(text)[1]


def different_arguments(name: str | None, other: str | None) -> bool:
    """Whether two names are one function at different arguments (``f(2)`` and ``f(3)``; spaces aside)."""
    first, second = (_APPLIED.match(n) if n else None for n in (name, other))
    if first is None or second is None or first.group("head") != second.group("head"):
        return False
    return first.group("arguments").replace(" ", "") != second.group("arguments").replace(" ", "")


def trig_degrees(text: str) -> str:
    """``text`` with degrees inside trigonometric functions written in radians (see the module docstring)."""
    if "circ" not in text or not _TRIG.search(text):
        return text
    return _DEGREES.sub(lambda m: f"\\frac{{{m.group(1)}\\pi}}{{180}}", text)


def digit_groups(text: str) -> str:
    """``text`` with LaTeX digit groups joined (``11,\\!111`` is ``11111``)."""
    return _DIGIT_GROUP.sub("", text) if ",\\!" in text else text


def option_letter(text: str) -> str:
    """``text`` as a bare option letter when it is one in a font (``\\mathcal{B}``) or followed by the option's text
    (``C. x = 42``), else ``text``."""
    font = _FONT_LETTER.match(text)
    if font is not None:
        return font.group(1).strip()
    leading = _LEADING_OPTION_TEXT.match(text)
    if leading is not None and not offers_another_option(text[leading.end() - 1 :]):
        return leading.group(1) or leading.group(2)
    return text


def offers_another_option(text: str) -> bool:
    """Whether ``text``, what follows a leading option letter, names another option: ``(B) or (C)``, ``A. But maybe
    C``. The option's own text may hold a capital (``B. Vitamin C``), so only a letter in brackets or after "or",
    "and", "maybe" counts."""
    return _ANOTHER_OPTION.search(text) is not None


_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ", "0123456789+-=()ni", strict=True))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎", "0123456789+-=()", strict=True))
_SUPERSCRIPT_RUN = re.compile(f"[{''.join(_SUPERSCRIPTS)}]+")
_SUBSCRIPT_RUN = re.compile(f"[{''.join(_SUBSCRIPTS)}]+")
_VULGAR_FRACTION = re.compile("(\\d?)([\u00bc-\u00be\u2150-\u215e])")
# a dash between two values is a range (3–5), one before a value a minus sign (–5)
_RANGE_DASH = re.compile("(?<=[\\w)}\\]])\\s*[\u2013\u2014]\\s*(?=[\\w(\\\\{$.])")
# a root sign before a number, a symbol or a bracketed group: √2, 2√3, √x, √(x+1)
_ROOT_SIGN = re.compile(r"√\s*(\d+(?:\.\d+)?|[A-Za-z]|\([^()]*\)|\{[^{}]*\})")
_SYMBOLS = {"∞": "\\infty ", "⌊": "\\lfloor ", "⌋": "\\rfloor ", "⌈": "\\lceil ", "⌉": "\\rceil "}
_MINUS_LIKE = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2212]")


def unicode_math(text: str) -> str:
    """``text`` with the Unicode forms of mathematics written as LaTeX, which Math-Verify reads (alone, it drops
    them: ``5²`` was 5, ``10⁻³`` was 10, ``3–5`` was 3): superscripts and subscripts (``x^{2}``, ``x_{1}``), vulgar
    fractions (``1½`` is ``1 1/2``), root signs (``2√3``), ``∞`` and floor and ceiling brackets, a dash between two
    values as the range it is (``3 to 5``, two values) and other dashes as minus signs."""
    if text.isascii():
        return text
    text = _SUPERSCRIPT_RUN.sub(lambda m: "^{" + "".join(_SUPERSCRIPTS[c] for c in m.group(0)) + "}", text)
    text = _SUBSCRIPT_RUN.sub(lambda m: "_{" + "".join(_SUBSCRIPTS[c] for c in m.group(0)) + "}", text)
    text = _VULGAR_FRACTION.sub(
        lambda m: (
            m.group(1) + (" " if m.group(1) else "") + unicodedata.normalize("NFKC", m.group(2)).replace("\u2044", "/")
        ),
        text,
    )
    text = _ROOT_SIGN.sub(lambda m: "\\sqrt{" + m.group(1).strip("(){}") + "}", text)
    for symbol, latex in _SYMBOLS.items():
        text = text.replace(symbol, latex)
    return _MINUS_LIKE.sub("-", _RANGE_DASH.sub(" to ", text))


# "=/=" and "=\=" are how plain text writes "≠"; Math-Verify alone reads "x =/= 12" as the equation x = 12
_NOT_EQUAL_SPELLINGS = re.compile(r"=\s*[/\\]\s*=|!=")
# an ordinal's suffix raised or in a text group: 12^{\mathrm{th}}, 12^{th}, 12^\text{nd}, 12\textsuperscript{rd}
_ORDINAL = re.compile(
    r"(?<=\d)\s*(?:\^\s*\{?\s*(?:\\(?:mathrm|text|textrm|rm)\s*\{\s*)?|\\textsuperscript\s*\{\s*)"
    r"(st|nd|rd|th)\s*\}?\s*\}?(?![A-Za-z])"
)


def spelled_forms(text: str) -> str:
    """``text`` with the plain-text spellings of a relation as their symbol (``=/=`` and ``!=`` are ``\\neq``) and
    an ordinal's raised suffix written on its line (``12^{\\mathrm{th}}`` is ``12th``, the twelfth)."""
    return _ORDINAL.sub(r"\1", _NOT_EQUAL_SPELLINGS.sub(r" \\neq ", text))


def read_named(text: str) -> tuple[str | None, str]:
    """``(name, value)``: ``text`` read down to the value it states (a phrase, currency, LaTeX digit groups, a named
    quantity, degrees in trigonometric functions, percent in text), and the name it gave the value (None when it gave
    none). Units are split apart by :func:`split_unit` and qualifiers by :func:`qualifiers`, since what they mean
    depends on the other side."""
    # "= 5" states 5, and a backslash left at the end ("185\\") is a stray keystroke
    text = _OPENING_EQUALS.sub("", answer_phrase(spelled_forms(unicode_math(text.strip())))).removesuffix("\\")
    text = _CONJUNCTIVES.sub(" and ", _CONNECTIVES.sub(" or ", text.replace("+/-", "\\pm ")))
    text = without_currency(text)
    text = digit_groups(text)
    name, text = named_parts(text)
    text = _PERCENT_WORD.sub("\\\\%", _PERCENT_TEXT.sub("\\\\%", text))
    return name, trig_degrees(text).strip()


def read_forms(text: str) -> str:
    """``text`` read down to the value it states (see :func:`read_named`)."""
    return read_named(text)[1]
