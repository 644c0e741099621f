"""Dates as XERJ's aggregations read and print them: parsing, intervals, calendar buckets, formats.

Citations are `engine/crates/xerj-engine/src/aggs.rs` at e6e8e6a (see ``CONTRACT.md``).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

__all__ = [
    "interval_ms",
    "is_calendar",
    "calendar_floor",
    "calendar_next",
    "iso_utc",
    "parse_date_ms",
    "render",
    "tz_offset_ms",
]

_UTC = dt.timezone.utc
_DAY = 86_400_000
_UNITS = {
    "ms": 1,
    "s": 1_000,
    "m": 60_000,
    "h": 3_600_000,
    "d": _DAY,
    "w": 7 * _DAY,
    "M": 30 * _DAY,
    "q": 91 * _DAY,
    "y": 365 * _DAY,
}
_NAMED = {"second": "1s", "minute": "1m", "hour": "1h", "day": "1d", "week": "1w"}
_NAMED |= {"month": "1M", "quarter": "1q", "year": "1y"}
_MILLIS = "{ms}"  # where a format prints milliseconds (chrono's `%.3f` digits)
_CALENDAR = frozenset(["1m", "1h", "1d", "1w", "1M", "1q", "1y"])


def interval_ms(interval: str) -> int | None:
    """`interval_to_ms` (aggs.rs:4046-4078): `day`, `1d`, `90m`, `2w`…; a month is 30 days, a
    quarter 91, a year 365 (the fixed width); None for anything else."""
    text = _NAMED.get(interval.strip(), interval.strip())
    match = re.fullmatch(r"\s*([+-]?\d+)\s*(ms|s|m|h|d|w|M|q|y)", text)
    return int(match[1]) * _UNITS[match[2]] if match else None


def is_calendar(interval: str) -> bool:
    """`is_calendar_interval` (aggs.rs:4080-4103): the one-unit names and shorthands from a
    minute up; `1d` and `1w` count as calendar too."""
    return _NAMED.get(interval.strip(), interval.strip()) in _CALENDAR


def _utc(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=_UTC) + dt.timedelta(milliseconds=ms)


def _ms(moment: dt.datetime) -> int:
    return (moment - dt.datetime(1970, 1, 1, tzinfo=_UTC)) // dt.timedelta(milliseconds=1)


def calendar_floor(ms: int, interval: str) -> int:
    """`calendar_bucket_key` (aggs.rs:4105-4145): the start of the minute, hour, day, ISO week
    (Monday), month, quarter or year holding `ms`, in UTC."""
    unit = _NAMED.get(interval.strip(), interval.strip())
    fixed = {"1m": 60_000, "1h": 3_600_000, "1d": _DAY}
    if unit in fixed:
        return ms // fixed[unit] * fixed[unit]
    moment = _utc(ms)
    if unit == "1w":
        return ms // _DAY * _DAY - moment.weekday() * _DAY
    month = {"1M": moment.month, "1q": (moment.month - 1) // 3 * 3 + 1, "1y": 1}.get(unit)
    if month is None:
        return ms
    return _ms(dt.datetime(moment.year, month, 1, tzinfo=_UTC))


def calendar_next(ms: int, interval: str) -> int:
    """`next_calendar_bucket` (aggs.rs:4147-4199): the start of the following bucket."""
    unit = _NAMED.get(interval.strip(), interval.strip())
    step = {"1m": 60_000, "1h": 3_600_000, "1d": _DAY, "1w": 7 * _DAY}
    if unit in step:
        return ms + step[unit]
    moment = _utc(ms)
    months = {"1M": 1, "1q": 3, "1y": 12}.get(unit)
    if months is None:
        return ms
    total = moment.year * 12 + moment.month - 1 + months
    return _ms(dt.datetime(total // 12, total % 12 + 1, 1, tzinfo=_UTC))


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})"
)
_NAIVE = (
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d",
    "%Y-%m-%dT%H:%M",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
)


def parse_date_ms(value: Any) -> int | None:
    """`parse_date_ms` (aggs.rs:3920-3985): an integer is epoch milliseconds; a string is
    RFC 3339, ISO 8601 without a zone (UTC), a date, `YYYY-MM`, `YYYY-MM-DDTHH`, slashed or
    spaced forms, or finally an integer string; anything else (a float, a bare word) is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    if match := _RFC3339.fullmatch(value):
        try:
            fraction = (match[7] or ".0")[1:7].ljust(6, "0")
            zone = match[8]
            tz = _UTC if zone in "Zz" else dt.datetime.strptime(zone, "%z").tzinfo
            y, mo, d, h, mi, sec = (int(match[i]) for i in range(1, 7))
            stamp = dt.datetime(y, mo, d, h, mi, sec, int(fraction), tzinfo=tz)
            return _ms(stamp)
        except ValueError:
            pass
    for pattern in _NAIVE:
        try:
            return _ms(dt.datetime.strptime(value, pattern).replace(tzinfo=_UTC))
        except ValueError:
            continue
    partial = re.fullmatch(r"(\d{4})-(\d{2})|(\d{4}-\d{2}-\d{2}T\d{2})", value)
    if partial:
        try:
            if partial[1]:
                return _ms(dt.datetime(int(partial[1]), int(partial[2]), 1, tzinfo=_UTC))
            return _ms(dt.datetime.strptime(value, "%Y-%m-%dT%H").replace(tzinfo=_UTC))
        except ValueError:
            return None
    return int(value) if re.fullmatch(r"[+-]?\d+", value) else None


def tz_offset_ms(zone: str) -> int | None:
    """`parse_time_zone_offset` (aggs.rs:4202-4233): `Z`, `UTC`, `+01:00`, `-0330`, `+05`, in
    milliseconds east of UTC; None for a name (an IANA zone, which the stand-in does not
    resolve)."""
    text = zone.strip()
    if text in ("", "Z", "+00:00", "-00:00") or text.upper() == "UTC":
        return 0
    match = re.fullmatch(r"([+-])(\d{1,2}):(\d{1,2})|([+-])(\d{2})(\d{2})?", text)
    if not match:
        return None
    sign = -1 if (match[1] or match[4]) == "-" else 1
    hours, minutes = (match[2], match[3]) if match[1] else (match[5], match[6] or "0")
    return sign * (int(hours) * 3600 + int(minutes) * 60) * 1000


def iso_utc(ms: int) -> str:
    """`epoch_ms_to_iso8601_utc` (aggs.rs:3877-3882): `2026-11-02T00:00:00.000Z`."""
    return _utc(ms).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _strftime(pattern: str) -> str:
    """`java_to_strftime` (aggs.rs:3808-3870), for the Java letters it knows; quoted text is
    literal, any other character passes through."""
    out, i = "", 0
    table = [
        ("uuuu", "%Y"),
        ("yyyy", "%Y"),
        ("yy", "%y"),
        ("MM", "%m"),
        ("dd", "%d"),
        ("HH", "%H"),
        ("mm", "%M"),
        ("ss", "%S"),
        ("SSS", _MILLIS),
    ]
    while i < len(pattern):
        if pattern[i] == "'":
            end = pattern.find("'", i + 1)
            end = len(pattern) if end < 0 else end
            out += pattern[i + 1 : end].replace("%", "%%")
            i = end + 1
            continue
        for java, strf in table:
            if pattern.startswith(java, i):
                out, i = out + strf, i + len(java)
                break
        else:
            out, i = out + pattern[i].replace("%", "%%"), i + 1
    return out


_FORMATS = {
    "strict_date_optional_time": "%Y-%m-%dT%H:%M:%S.{ms}Z",
    "date_optional_time": "%Y-%m-%dT%H:%M:%S.{ms}Z",
    "iso8601": "%Y-%m-%dT%H:%M:%S.{ms}Z",
    "date_time": "%Y-%m-%dT%H:%M:%S.{ms}Z",
    "strict_date_time": "%Y-%m-%dT%H:%M:%S.{ms}Z",
    "basic_date": "%Y%m%d",
    "date": "%Y-%m-%d",
    "strict_date": "%Y-%m-%d",
    "date_hour_minute_second": "%Y-%m-%dT%H:%M:%S",
    "hour": "%H",
    "year": "%Y",
    "strict_year": "%Y",
    "year_month": "%Y-%m",
    "strict_year_month": "%Y-%m",
    "year_month_day": "%Y-%m-%d",
    "strict_year_month_day": "%Y-%m-%d",
}


def render(ms: int, fmt: str | None, offset: int | None = None) -> str:
    """A bucket key as `render_date_format` prints it (aggs.rs:3727-3773): the first format of
    a `||` chain, a named format, or a Java pattern; by default `…T…:…:….mmmZ`. With an
    explicit `time_zone` (`offset`, ms) and no format, ISO 8601 with the offset instead of
    `Z` (aggs.rs:4638-4660)."""
    name = fmt.split("||")[0].strip() if fmt else None
    if offset is not None and name is None:
        local = _utc(ms + offset)
        sign, minutes = ("-" if offset < 0 else "+"), abs(offset) // 60_000
        stamp = local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{(ms + offset) % 1000:03d}"
        return f"{stamp}{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    shifted = ms + (offset or 0)
    if name == "epoch_millis":
        return str(shifted)
    if name == "epoch_second":
        return str(int(shifted / 1000))
    pattern = _FORMATS.get(name) if name else _FORMATS["date_time"]
    if pattern is None:
        pattern = _strftime(name or "")
    return _utc(shifted).strftime(pattern).replace(_MILLIS, f"{shifted % 1000:03d}")
