"""time_verify: 12h/24h times, date formats, the dateutil fallback, compared fields, offsets, bounds."""

import pytest

from verifiers import run_verifier, time_verify
from verifiers.result import TargetError


@pytest.mark.parametrize(
    "target, tformat, predict, pformat, expected",
    [
        # 12h and 24h clocks
        ("18:15", "%H:%M", "18:15", "%H:%M", 1.0),
        ("18:15", "%H:%M", "06:15 PM", "%I:%M %p", 1.0),
        ("18:15", "%H:%M", "6:15 pm", "%I:%M %p", 1.0),
        ("18:15", "%H:%M", "06:15 AM", "%I:%M %p", 0.0),
        ("18:15", "%H:%M", "18:16", "%H:%M", 0.0),
        ("00:30", "%H:%M", "12:30 AM", "%I:%M %p", 1.0),
        ("18:15", "%H:%M", "18:15:00", "%H:%M:%S", 1.0),
        # date formats
        ("2024-03-05", "%Y-%m-%d", "05/03/2024", "%d/%m/%Y", 1.0),
        ("2024-03-05", "%Y-%m-%d", "03/05/2024", "%m/%d/%Y", 1.0),
        ("2024-03-05", "%Y-%m-%d", "March 5, 2024", "%B %d, %Y", 1.0),
        ("2024-03-05", "%Y-%m-%d", "5 Mar 24", "%d %b %y", 1.0),
        ("2024-03-05", "%Y-%m-%d", "2024-03-06", "%Y-%m-%d", 0.0),
        ("March 2024", "%B %Y", "2024-03", "%Y-%m", 1.0),
        # only the fields the target format names are compared
        ("18:15", "%H:%M", "2024-01-01 18:15", "%Y-%m-%d %H:%M", 1.0),
        ("2024-03-05", "%Y-%m-%d", "March 5", "%B %d", 0.0),  # the year is missing
        # date and time together
        ("2024-03-05 18:15", "%Y-%m-%d %H:%M", "5 March 2024, 6:15 PM", "%d %B %Y, %I:%M %p", 1.0),
        # UTC offsets on both sides compare instants
        ("2024-03-05 10:00 +0000", "%Y-%m-%d %H:%M %z", "2024-03-05 11:00 +0100", "%Y-%m-%d %H:%M %z", 1.0),
        ("18:15 +0000", "%H:%M %z", "18:15 +05:00", None, 0.0),
        ("18:15 +0000", "%H:%M %z", "23:15 +05:00", None, 1.0),
        ("18:15 +0000", "%H:%M %z", "18:15", None, 0.0),  # the target's offset is a field the prediction omits
        ("18:15", "%H:%M", "18:15 +05:00", None, 1.0),  # a target without one compares the clock only
        # UTC+2 is two hours ahead of UTC, not the POSIX reading dateutil makes alone
        ("16:15 +0000", "%H:%M %z", "18:15 UTC+2", None, 1.0),
        ("16:15 +0000", "%H:%M %z", "18:15 GMT+02:00", None, 1.0),
        ("16:15 +0000", "%H:%M %z", "14:15 UTC-2", None, 1.0),
        ("16:15 +0000", "%H:%M %z", "18:15 UTC-2", None, 0.0),
        # without pformat, or with one that does not match, dateutil reads the prediction
        ("2024-03-05", "%Y-%m-%d", "5 March 2024", None, 1.0),
        ("2024-03-05", "%Y-%m-%d", "March 5th, 2024", "%d/%m/%Y", 1.0),
        ("05/03/2024", "%d/%m/%Y", "05.03.2024", None, 1.0),  # day first, as in the target format
        ("18:15", "%H:%M", "6:15pm", None, 1.0),
        # a year first is year, month, day, also where the target puts the day first (dateutil would read year, day,
        # month: 2024-03-05 as 3 May)
        ("05/03/2024", "%d/%m/%Y", "2024-03-05", None, 1.0),
        ("03/05/2024", "%d/%m/%Y", "2024-03-05", None, 0.0),
        ("05/03/2024", "%d/%m/%Y", "2024/03/05", None, 1.0),
        ("05/03/2024", "%d/%m/%Y", "20240305", None, 1.0),
        ("05/03/2024 10:00", "%d/%m/%Y %H:%M", "2024-03-05T10:00", None, 1.0),
        ("05/03/24", "%d/%m/%y", "05.03.24", None, 1.0),
        # below a stated hour, an unsaid minute or second is zero, as clocks are read
        ("18:00", "%H:%M", "6 PM", None, 1.0),
        ("18:00", "%H:%M", "6 PM", "%I %p", 1.0),
        ("18:15:00", "%H:%M:%S", "18:15", None, 1.0),
        ("18:15:30", "%H:%M:%S", "18:15", None, 0.0),
    ],
)
def test_time_table(target, tformat, predict, pformat, expected):
    assert time_verify(target=target, tformat=tformat, predict=predict, pformat=pformat) == expected


@pytest.mark.parametrize(
    "target, tformat, predict, pformat, unsaid",
    [
        # each target's value in the field the prediction omits is the one a parser fills in by default (1900-01-01
        # 00:00): a field is compared only when the prediction states it
        ("January 01", "%B %d", "2024", None, "month, day"),
        ("January 01", "%B %d", "2024", "%Y", "month, day"),
        ("January", "%B", "1", None, "month"),
        ("01", "%d", "January", None, "day"),
        ("1900", "%Y", "March", None, "year"),
        ("2024-01-01", "%Y-%m-%d", "2024", None, "month, day"),
        ("2024-01-01", "%Y-%m-%d", "2024-01", None, "day"),
        ("00:00", "%H:%M", "2024-03-05", None, "hour, minute"),
        ("00:00", "%H:%M", "Monday", None, "hour, minute"),
        ("12:00 AM", "%I:%M %p", "2024-03-05", "%Y-%m-%d", "hour, minute"),
        ("2024-03-05 00:00", "%Y-%m-%d %H:%M", "2024-03-05", None, "hour, minute"),
    ],
)
def test_a_field_the_prediction_does_not_state_is_not_taken_from_a_default(target, tformat, predict, pformat, unsaid):
    result = run_verifier("time_verify", {"target": target, "tformat": tformat},
                          {"predict": predict, **({"pformat": pformat} if pformat else {})})  # fmt: skip
    assert (result.score, result.status) == (0.0, "ok")
    assert result.reason.endswith(f"states no {unsaid}")


@pytest.mark.parametrize(
    "target, tformat, predict",
    [
        # dateutil keeps the last of two clocks and the first of two dates: each was paid for one of them
        ("19:00", "%H:%M", "18:15 and 19:00"), ("19:00", "%H:%M", "18:15, 19:00"), ("19:00", "%H:%M", "18:15-19:00"),
        ("2024-03-05", "%Y-%m-%d", "2024-03-05 and 2024-03-06"),
        ("2024-03-05", "%Y-%m-%d", "March 5 and March 6, 2024"), ("19:00", "%H:%M", "6 PM and 7 PM"),
        ("19:00", "%H:%M", "6:15 PM and 7 PM"),
    ],
)  # fmt: skip
def test_a_prediction_stating_two_times_or_dates_is_unparseable(target, tformat, predict):
    result = run_verifier("time_verify", {"target": target, "tformat": tformat}, {"predict": predict})
    assert (result.score, result.status) == (0.0, "unparseable_pred")
    assert "states 2" in result.reason


@pytest.mark.parametrize(
    "target, tformat, predict",
    [
        ("18:15 +0500", "%H:%M %z", "2024-03-05T18:15:00+05:00"), ("18:15 +0500", "%H:%M %z", "18:15 UTC+5"),
        ("18:15", "%H:%M", "18:15:30"), ("2024-03-05", "%Y-%m-%d", "Tuesday, March 5, 2024 at 18:15"),
        ("2024-03-05", "%Y-%m-%d", "5 March 2024"),
    ],
)  # fmt: skip
def test_one_time_with_its_offset_or_date_is_one(target, tformat, predict):
    assert run_verifier("time_verify", {"target": target, "tformat": tformat}, {"predict": predict}).score == 1.0


@pytest.mark.parametrize("predict", ["", "not a time", "99:99", "x" * 300])
def test_unreadable_prediction_scores_zero(predict):
    result = run_verifier("time_verify", {"target": "18:15", "tformat": "%H:%M"}, {"predict": predict})
    assert (result.score, result.status) == (0.0, "unparseable_pred")


@pytest.mark.parametrize(
    "target, tformat",
    [("18:15", "%Y-%m-%d"), ("2024-13-01", "%Y-%m-%d"), ("1" * 300, "%H"), ("Tuesday", "%A"), ("PM", "%p")],
)
def test_bad_target_raises(target, tformat):
    with pytest.raises(TargetError):
        time_verify(target=target, tformat=tformat, predict="18:15", pformat="%H:%M")


def test_an_offset_datetime_refuses_is_an_unreadable_prediction():
    result = run_verifier("time_verify", {"target": "2024-01-01T18:15+01:00", "tformat": "%Y-%m-%dT%H:%M%z"},
                          {"predict": "2024-01-01T18:15+99:99"})  # fmt: skip
    assert (result.score, result.status) == (0.0, "unparseable_pred")


def test_an_unexpected_failure_on_the_prediction_is_the_prediction_s_not_the_server_s():
    from unittest import mock

    # fails after the prediction is read: the rubric side alone passes, so the prediction is what could not be read
    with mock.patch("verifiers.dates.format_fields", side_effect=OverflowError("odd")):
        result = run_verifier("time_verify", {"target": "18:15", "tformat": "%H:%M"}, {"predict": "6:15 PM"})
    assert result.status == "unparseable_pred" and "OverflowError" in result.reason
    # fails on the target: the rubric side alone fails too, so it is not the prediction's fault
    with mock.patch("verifiers.dates._parse_target", side_effect=OverflowError("odd")):
        both = run_verifier("time_verify", {"target": "18:15", "tformat": "%H:%M"}, {"predict": "6:15 PM"})
    assert both.status == "error"
