"""time_verify: 1 when the predicted date/time equals the target on every field the target's format specifies.

Both sides are parsed with Python's ``datetime.strptime``: the target with ``tformat``, the prediction with
``pformat`` (the format as written in the response, so ``06:15 PM`` with ``%I:%M %p`` equals ``18:15`` with
``%H:%M``). When ``pformat`` is absent or does not match the prediction, ``dateutil.parser.parse`` reads it instead,
with day-first order when the target format puts the day before the month.

A prediction whose year comes first (``2024-03-05``, ``2024/03/05``, ``20240305``) is read year, month, day even
when the target's format puts the day first: dateutil's day-first reading would take it as year, day, month.

Compared fields: those the target format names (``%Y``/``%y`` year, ``%m``/``%b``/``%B`` month, ``%d`` day, ``%j``
month and day, ``%H``/``%I`` hour, ``%M`` minute, ``%S`` second, ``%f`` microsecond). A time-only target therefore
ignores any date in the prediction, and a prediction that omits a field the target gives does not match, whatever
the target's value there: ``2024`` is not ``January 01``, and a date alone is not ``00:00``. Which fields a
prediction states is what its ``pformat`` names, or, read by dateutil, what stays the same when it is read over two
different defaults. One convention of clocks is kept: below a stated hour, an unstated minute, second or
microsecond is zero (``6 PM`` is ``18:00``, ``18:15`` is ``18:15:00``). When both
sides carry a UTC offset (``%z``), the prediction is converted to the target's offset first; when only the target
does, the prediction omits a field and does not match. ``UTC+2`` and ``GMT+2`` mean two hours ahead of UTC (dateutil
alone reads them the POSIX way, two hours behind). Locale composites (``%c``, ``%x``, ``%X``) compare every field.
Weekday names are not compared.

Not accepted: strings or formats longer than ``VerifyConfig.max_time_chars``; a target that does not match its
``tformat``, or a ``tformat`` that names none of the compared fields (``%A`` alone), is a rubric error; a prediction
that neither parser reads scores 0 as unparseable, and so does one that states two clock times or two dates
(``18:15 and 19:00``, ``6 PM and 7 PM``, ``2024-03-05 or 2024-03-06``, ``18:15-19:00``), of which dateutil alone
keeps one. A signed clock of at most 14 hours after a time is its UTC offset (``18:15-05:00``), not a second time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from verifiers.config import VerifyConfig
from verifiers.result import PredictionError, TargetError, VerifyResult

_DIRECTIVE_FIELDS: dict[str, tuple[str, ...]] = {
    "Y": ("year",), "y": ("year",), "G": ("year",),
    "m": ("month",), "b": ("month",), "B": ("month",), "h": ("month",),
    "d": ("day",), "j": ("month", "day"),
    "H": ("hour",), "I": ("hour",), "M": ("minute",), "S": ("second",), "f": ("microsecond",),
    "c": ("year", "month", "day", "hour", "minute", "second"),
    "x": ("year", "month", "day"), "X": ("hour", "minute", "second"),
    "T": ("hour", "minute", "second"), "D": ("year", "month", "day"), "F": ("year", "month", "day"),
    "R": ("hour", "minute"),
}  # fmt: skip
_ALL_FIELDS = ("year", "month", "day", "hour", "minute", "second", "microsecond")
_DIRECTIVE = re.compile(r"%([a-zA-Z%])")
_DEFAULT = datetime(1900, 1, 1)
# a second default that differs from the first in every field (March: any day January accepts, March accepts): a field
# dateutil reads the same over both is one the prediction states
_OTHER_DEFAULT = datetime(2001, 3, 2, 1, 1, 1, 1)
# below a stated hour, a clock leaves zero fields unsaid: "6 PM" is 18:00, "18:15" is 18:15:00
_ZERO_BELOW_HOUR = ("minute", "second", "microsecond")
# year first (ISO 8601 and its slashed or dotted forms): never year, day, month, whatever the target's order
_YEAR_FIRST = re.compile(r"^\s*(?:\d{4}\s*[-/.]|\d{8}(?!\d))")
# Clock times and dates, to count them: dateutil keeps the last of two clocks and the first of two dates it is given
# ("18:15 and 19:00" is 19:00 to it), so a prediction stating two would be paid for either.
_CLOCK = re.compile(r"(?<![\d.:])(\d{1,2})(?::\d{2}(?::\d{2})?(?![\d:])|\s*[AaPp]\.?\s?[Mm]\b\.?)")
_DATE = re.compile(
    r"(?<!\d)(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})(?!\d)"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2}(?!\d)"
    r"|(?<!\d)\d{1,2}(?:st|nd|rd|th)?\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)",
    re.IGNORECASE,
)
# the largest UTC offset in use is +14:00: a signed clock no larger, after a time, is an offset, not a second time
_MAX_OFFSET_HOURS = 14
_NAMED_OFFSET = re.compile(r"\s*\b(?:UTC|GMT)\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?\b")


@lru_cache(maxsize=4096)
def named_fields(fmt: str) -> tuple[str, ...]:
    """The datetime fields a strptime format's directives name, in a fixed order (none for a format without one)."""
    named = {field for d in _DIRECTIVE.findall(fmt) for field in _DIRECTIVE_FIELDS.get(d, ())}
    return tuple(f for f in _ALL_FIELDS if f in named)


def format_fields(fmt: str) -> tuple[str, ...]:
    """The datetime fields a target's strptime format specifies, in a fixed order: the ones compared (a target format
    that names none is refused before it is compared)."""
    return named_fields(fmt)


def _day_first(fmt: str) -> bool:
    directives = _DIRECTIVE.findall(fmt)
    day = next((i for i, d in enumerate(directives) if d == "d"), None)
    month = next((i for i, d in enumerate(directives) if d in "mbBh"), None)
    return day is not None and month is not None and day < month


@lru_cache(maxsize=4096)
def _parse_target(target: str, tformat: str) -> datetime:
    if not named_fields(tformat):  # a weekday or AM/PM alone: every field would be strptime's default
        raise TargetError(f"tformat {tformat!r} names no field time_verify compares (year, month, day, hour, minute, "
                          "second, microsecond; weekdays are not compared)")  # fmt: skip
    try:
        return datetime.strptime(target.strip(), tformat)
    except ValueError as exc:
        raise TargetError(f"target {target!r} does not match tformat {tformat!r}: {exc}") from None


def _refuse_two(text: str) -> None:
    """Raise PredictionError when ``text`` states two clock times or two dates (see ``_CLOCK``)."""
    clocks = [m for m in _CLOCK.finditer(text)
              if not (text[: m.start()].rstrip()[-1:] in ("+", "-", "\u2212") and int(m.group(1)) <= _MAX_OFFSET_HOURS
                      and _CLOCK.search(text, 0, m.start()))]  # fmt: skip
    for kind, found in (("times", [m.group(0) for m in clocks]), ("dates", _DATE.findall(text))):
        if len(found) > 1:
            shown = ", ".join(repr(item) for item in found[:3])
            raise PredictionError(f"{text!r:.80} states {len(found)} {kind} ({shown}); one can be compared")


def _parse_prediction(predict: str, pformat: str | None, tformat: str) -> tuple[datetime, frozenset[str], str]:
    """The prediction read, the fields it states, and how it was read."""
    text = predict.strip()
    if not text:
        raise PredictionError("the prediction is empty")
    if pformat:
        try:
            return datetime.strptime(text, pformat), frozenset(named_fields(pformat)), f"pformat {pformat!r}"
        except ValueError:
            pass
    from dateutil import parser as date_parser  # imported on first use

    # dateutil reads "UTC+2" the POSIX way (two hours behind UTC); people mean two hours ahead, as ISO 8601 writes it
    text = _NAMED_OFFSET.sub(lambda m: f" {m.group(1)}{int(m.group(2)):02d}:{m.group(3) or '00'}", text)
    _refuse_two(text)

    dayfirst = _day_first(pformat or tformat) and not _YEAR_FIRST.match(text)
    try:
        parsed = date_parser.parse(text, default=_DEFAULT, dayfirst=dayfirst)
        other = date_parser.parse(text, default=_OTHER_DEFAULT, dayfirst=dayfirst)
    except (ValueError, OverflowError) as exc:
        where = f"with pformat {pformat!r} or " if pformat else ""
        raise PredictionError(f"cannot read {text!r:.80} as a date/time {where}with dateutil: {exc}") from None
    stated = frozenset(f for f in _ALL_FIELDS if getattr(parsed, f) == getattr(other, f))
    return parsed, stated, "dateutil" + (f" (pformat {pformat!r} did not match)" if pformat else "")


def check_time(rubric: Mapping[str, Any], scoring: Mapping[str, Any], config: VerifyConfig) -> VerifyResult:
    """1.0 when the prediction equals the target on the target format's fields, else 0.0 (see module docstring)."""
    target, tformat = rubric["target"], rubric["tformat"]
    if len(target) > config.max_time_chars or len(tformat) > config.max_time_chars:
        raise TargetError(f"target and tformat may have at most {config.max_time_chars} characters")
    expected = _parse_target(target, tformat)
    predict, pformat = scoring["predict"], scoring.get("pformat")
    if len(predict) > config.max_time_chars or (pformat is not None and len(pformat) > config.max_time_chars):
        raise PredictionError(f"the prediction and pformat may have at most {config.max_time_chars} characters")
    actual, stated, how = _parse_prediction(predict, pformat, tformat)
    fields = format_fields(tformat)
    unsaid = [f for f in fields if f not in stated and not (f in _ZERO_BELOW_HOUR and "hour" in stated)]
    if unsaid:  # the default that filled the field is not the prediction's, even when it equals the target's
        return VerifyResult(0.0, "ok", f"read with {how}; states no {', '.join(unsaid)}", "time_verify")
    if expected.tzinfo is not None and actual.tzinfo is None:
        # the target's format names a UTC offset: a prediction that gives none omits a field the target gives
        return VerifyResult(0.0, "ok", f"read with {how}; the target gives a UTC offset and the prediction none",
                            "time_verify")  # fmt: skip
    if expected.tzinfo is not None and actual.tzinfo is not None:
        try:
            actual = actual.astimezone(expected.tzinfo)
        except (ValueError, OverflowError) as exc:  # dateutil reads offsets datetime refuses ('+99:99')
            raise PredictionError(f"cannot compare {predict!r:.80} with the target's time zone: {exc}") from None
    differing = [f for f in fields if getattr(actual, f) != getattr(expected, f)]
    if differing:
        return VerifyResult(0.0, "ok", f"read with {how}; differs in {', '.join(differing)}", "time_verify")
    return VerifyResult(1.0, "ok", f"read with {how}; equal on {', '.join(fields)}", "time_verify")
