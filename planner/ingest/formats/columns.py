"""Column converters: one column of raw values -> a typed numpy array, or a TraceFormatError naming the first
bad line (``first_line`` is the file line of the column's first value)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from planner.ingest.errors import TraceFormatError
from planner.ingest.formats.spec import INT32_MAX, TIERS
from planner.ingest.limits import MAX_SECONDS

HASH_MAX = 2**63 - 1


def first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _reject_first(mask: np.ndarray, first_line: int, column: str, message: Callable[[int], str], hint: str) -> None:
    """Raise for the first row where ``mask`` is true; ``message(i)`` describes row ``i``."""
    if mask.any():
        i = first_bad(mask)
        raise TraceFormatError(message(i), line=first_line + i, column=column, hint=hint)


def _is_empty(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == ""


def relined(fn, lines: np.ndarray, *args, **kwargs):
    """``fn(*args, **kwargs)`` with a TraceFormatError's row index (0-based in what ``fn`` saw) turned into the
    file's line number ``lines[index]`` (kept as is when missing or outside ``lines``)."""
    try:
        return fn(*args, **kwargs)
    except TraceFormatError as exc:
        line = int(lines[exc.line]) if exc.line is not None and 0 <= exc.line < len(lines) else exc.line
        raise TraceFormatError(exc.message, line=line, column=exc.column, hint=exc.hint) from None


def token_column(values: pd.Series, name: str, first_line: int) -> np.ndarray:
    """Whole numbers >= 0 that fit int32, as int64."""
    if values.dtype.kind in "iu":
        arr = values.to_numpy(dtype=np.int64)
    else:
        num = pd.to_numeric(values, errors="coerce")
        _reject_first(
            num.isna().to_numpy(),
            first_line,
            name,
            lambda i: "is empty"
            if _is_empty(values.iloc[i])
            else f"has {str(values.iloc[i])[:40]!r}, which is not a number",
            hint=f"{name} must be a whole number of tokens >= 0 on every line; fix or remove the line",
        )
        num = num.to_numpy(dtype=np.float64)
        _reject_first(
            num != np.floor(num),
            first_line,
            name,
            lambda i: f"has {num[i]!r}, which is not a whole number",
            hint=f"{name} counts tokens: use whole numbers",
        )
        arr = num.astype(np.int64)
    _reject_first(
        arr < 0,
        first_line,
        name,
        lambda i: f"is negative ({arr[i]})",
        hint=f"{name} must be >= 0; fix or remove the line",
    )
    _reject_first(
        arr > INT32_MAX, first_line, name, lambda i: f"is too large ({arr[i]})", hint=f"{name} must be below 2^31"
    )
    return arr


def seconds_column(values: pd.Series, name: str, first_line: int, *, scale: float = 1.0) -> np.ndarray:
    """Numeric times (seconds, or ``scale`` seconds per unit) -> int64 nanoseconds."""
    arr = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    _reject_first(
        ~np.isfinite(arr),
        first_line,
        name,
        lambda i: f"has {str(values.iloc[i])[:40]!r}, which is not a time",
        hint=f"{name} must be a number of seconds (or an ISO timestamp) on every line",
    )
    _reject_first(
        arr < 0,
        first_line,
        name,
        lambda i: f"is negative ({arr[i]})",
        hint="times are seconds from the start of the trace, >= 0",
    )
    _reject_first(
        arr * scale > MAX_SECONDS,
        first_line,
        name,
        lambda i: f"is too large ({str(values.iloc[i])[:40]})",
        hint=f"times are seconds from the start of the trace, below {MAX_SECONDS:.0e} (about 300 years)",
    )
    return np.round(arr * (scale * 1e9)).astype(np.int64)


def timestamp_column(values: pd.Series, name: str, first_line: int) -> np.ndarray:
    """ISO-8601-ish timestamps, mixed precision and zones allowed (naive = UTC) -> epoch ns."""
    parsed = pd.to_datetime(values, format="ISO8601", utc=True, errors="coerce")
    _reject_first(
        parsed.isna().to_numpy(),
        first_line,
        name,
        lambda i: f"has {str(values.iloc[i])[:40]!r}, which is not a timestamp",
        hint="use ISO 8601, e.g. 2024-05-10 00:00:00.009930+00:00 or 2024-10-15T12:00:00.269Z",
    )
    return parsed.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").view(np.int64)


def looks_numeric(values: pd.Series) -> bool:
    """Decided by the first non-empty value, so one bad value later is reported as bad, not as a mode."""
    if values.dtype.kind in "iuf":
        return True
    for value in values.head(1000):
        if value is None or (isinstance(value, float) and np.isnan(value)) or not str(value).strip():
            continue
        try:
            float(str(value).strip())
            return True
        except ValueError:
            return False
    return False


def tier_column(values: pd.Series, name: str, first_line: int) -> np.ndarray:
    text = values.astype("string").str.strip().str.upper().str.replace("_", "-", regex=False)
    text = text.fillna("IW-F").replace({"": "IW-F"})
    _reject_first(
        ~text.isin(TIERS).to_numpy(),
        first_line,
        name,
        lambda i: f"has {str(values.iloc[i])[:40]!r}, which is not a tier",
        hint="tier must be one of IW-F, IW-N, NIW (or empty for IW-F)",
    )
    return text.to_numpy(dtype=object)


def bool_column(values: pd.Series, name: str, first_line: int) -> np.ndarray:
    text = values.astype("string").str.strip().str.lower().fillna("")
    mapping = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False, "": False}
    _reject_first(
        ~text.isin(list(mapping)).to_numpy(),
        first_line,
        name,
        lambda i: f"has {str(values.iloc[i])[:40]!r}, which is not true/false",
        hint="use 1/0 or true/false",
    )
    return text.map(mapping).to_numpy(dtype=bool)


def string_column(values: pd.Series, default: str) -> np.ndarray:
    text = values.astype("string").str.strip()
    return text.fillna(default).replace({"": default}).to_numpy(dtype=object)


def _hash_list(value) -> list[int]:
    """A prefix-block hash list: integers (64-bit) in a JSON list or a "1 2 3" / "[1,2,3]" string."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    if isinstance(value, list):
        items = value
    else:
        text = str(value).strip().strip("[]")
        items = text.replace(",", " ").split() if text else []
    out = []
    for x in items:
        if isinstance(x, bool) or not isinstance(x, int | str) or (isinstance(x, str) and not x.lstrip("-").isdigit()):
            raise TraceFormatError(
                f"hash_ids has {str(x)[:40]!r}, which is not an integer",
                line=0,
                column="hash_ids",
                hint="hash_ids is a list of integer block hashes, e.g. [1, 2, 3]",
            )
        n = int(x)
        if abs(n) > HASH_MAX:
            raise TraceFormatError(
                f"hash_ids has {str(x)[:40]}, beyond 64 bits",
                line=0,
                column="hash_ids",
                hint="block hashes must fit in a signed 64-bit integer",
            )
        out.append(n)
    return out


def hash_lists(values, lines: np.ndarray) -> list[list[int]]:
    out = []
    for i, v in enumerate(values):
        try:
            out.append(_hash_list(v))
        except TraceFormatError as exc:
            raise TraceFormatError(
                exc.message, line=int(lines[i]) if i < len(lines) else None, column=exc.column, hint=exc.hint
            ) from None
    return out


# ---------------------------------------------------------------------------------------------
# CSV chunks: convert the non-blank rows, naming the file's line in errors


def line_numbers(first: int, blank: np.ndarray) -> np.ndarray:
    return first + np.flatnonzero(~blank)


def timed(values: pd.Series, name: str, first: int, blank: np.ndarray) -> np.ndarray:
    """Times of the non-blank rows; errors still name the true line."""
    sub = values[~blank].reset_index(drop=True)
    parse = seconds_column if looks_numeric(sub) else timestamp_column
    return relined(parse, line_numbers(first, blank), sub, name, 0)


def tokens(values: pd.Series, name: str, first: int, blank: np.ndarray) -> np.ndarray:
    return relined(token_column, line_numbers(first, blank), values[~blank].reset_index(drop=True), name, 0)


def kept_columns(out: pd.DataFrame, frame: pd.DataFrame, kept: dict[str, str], blank: np.ndarray) -> pd.DataFrame:
    """Copy the mapped source columns (``keep``) of the non-blank rows as ``src:<name>`` strings."""
    for name, actual in kept.items():
        out[f"src:{name}"] = string_column(frame[actual][~blank], "")
    return out
