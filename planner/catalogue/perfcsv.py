"""Read a splitwise/SageServe ``perf_model.csv``-format table and normalise its units.

Columns (header required; extra columns ignored):
``model, hardware, prompt_size, batch_size, token_size, prompt_time, token_time, tensor_parallel``
and optionally ``e2e_time, peak_power, average_power``.

The public files disagree on units (checked on the data, see docs/hardware.md):

* ``perf_model.csv`` (and models A/B of ``perf_model_4_models.csv``): milliseconds, ``token_time`` is
  the time of ONE decode iteration (``e2e ~= prompt_time + token_size * token_time``);
* the Llama-3.x files (and models C/D): seconds, ``token_time`` is the TOTAL decode time of
  ``token_size`` tokens (``e2e ~= prompt_time + token_time``).

``normalise`` detects both per (model, hardware, tensor_parallel) group unless told, and returns
seconds with ``token_time_s`` per decode iteration. The detection is recorded so it can be shown.
"""

from __future__ import annotations

import gzip
import io
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from planner.catalogue.errors import ProfileError

REQUIRED = (
    "model",
    "hardware",
    "prompt_size",
    "batch_size",
    "token_size",
    "prompt_time",
    "token_time",
    "tensor_parallel",
)
INT_COLUMNS = ("prompt_size", "batch_size", "token_size", "tensor_parallel")
TIME_COLUMNS = ("prompt_time", "token_time")
TIME_UNITS = ("auto", "ms", "s")
TOKEN_TIME_MODES = ("auto", "per_token", "total")
MAX_ROWS = 1_000_000

# A median prompt_time below this is read as seconds: no prefill of >= 128 tokens takes < 2 ms on the
# models of interest, and none takes a median of > 2 s across a sweep.
SECONDS_IF_MEDIAN_BELOW = 2.0


@dataclass
class GroupUnits:
    """What ``normalise`` decided for one (model, hardware, tp) group, and why."""

    time_unit: str
    token_time: str
    reason: str

    def as_dict(self) -> dict:
        return {"time_unit": self.time_unit, "token_time": self.token_time, "reason": self.reason}


@dataclass
class PerfTable:
    """Normalised rows: times in seconds, ``token_time_s`` per decode iteration."""

    rows: pd.DataFrame
    units: dict[tuple[str, str, int], GroupUnits] = field(default_factory=dict)

    def groups(self):
        for key, frame in self.rows.groupby(["model", "hardware", "tp"], sort=True):
            yield (str(key[0]), str(key[1]), int(key[2])), frame.reset_index(drop=True)


def _line(index: int) -> str:
    # data row i (0-based) is on line i + 2 of the file (line 1 is the header)
    return f"line {index + 2}"


def _read_text(source) -> str:
    """The table's text from a path, bytes, text or file object, plain or gzip; a ProfileError if it is
    unreadable, empty, binary or not UTF-8."""
    if isinstance(source, Path) or (isinstance(source, str) and source.strip() and "\n" not in source):
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise ProfileError(f"cannot read the file: {exc.strerror}", where=str(source)) from None
    elif isinstance(source, bytes):
        data = source
    elif isinstance(source, str):
        data = source.encode()
    else:
        data = source.read()
        if isinstance(data, str):
            data = data.encode()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise ProfileError(
                f"the gzip file is damaged or truncated ({exc})", where="file", hint="upload the complete file"
            ) from None
    if not data.strip():
        raise ProfileError("the file is empty", where="line 1", hint="upload a perf_model.csv-format table")
    if b"\x00" in data[:65536]:
        raise ProfileError(
            "the file is binary, not a CSV table", where="line 1", hint="upload a perf_model.csv-format CSV"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ProfileError(
            "the file is not UTF-8 text", where=f"byte {exc.start}", hint="save it as a UTF-8 CSV"
        ) from None
    return text


def read_perf_csv(source) -> pd.DataFrame:
    """Read the raw table (path, bytes, text or file object; plain or gzip) and validate it; raw units kept.

    Raises ProfileError naming the line and column of the first problem.
    """
    text = _read_text(source)
    try:
        raw = pd.read_csv(io.StringIO(text), dtype=str, skipinitialspace=True, nrows=MAX_ROWS + 1)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ProfileError(
            f"the CSV cannot be parsed: {exc}", where="file", hint="check separators and quoting"
        ) from None
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        raise ProfileError(
            f"missing column(s): {', '.join(missing)}",
            where="line 1 (header)",
            hint="the header must contain " + ",".join(REQUIRED) + " (e2e_time optional)",
        )
    if raw.empty:
        raise ProfileError("the table has a header but no data rows", where="line 2", hint="add measured rows")
    if len(raw) > MAX_ROWS:
        raise ProfileError(f"more than {MAX_ROWS} rows", where="file", hint="split the file per model")
    out = pd.DataFrame(index=raw.index)
    for col in ("model", "hardware"):
        values = raw[col].fillna("").str.strip()
        bad = values == ""
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ProfileError(f"empty {col}", where=f"{_line(i)}, column {col}", hint=f"fill in the {col} name")
        out[col] = values
    numeric = list(INT_COLUMNS) + list(TIME_COLUMNS) + (["e2e_time"] if "e2e_time" in raw.columns else [])
    for col in numeric:
        values = pd.to_numeric(raw[col].str.strip(), errors="coerce")
        bad = values.isna() | ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ProfileError(
                f"{col} is {raw[col].iloc[i]!r}, not a number",
                where=f"{_line(i)}, column {col}",
                hint="fix the value or delete the row",
            )
        if col in INT_COLUMNS:
            nonint = (values != np.round(values)) | (values < 1)
            if nonint.any():
                i = int(np.flatnonzero(nonint.to_numpy())[0])
                raise ProfileError(
                    f"{col} is {raw[col].iloc[i]!r}; it must be a whole number >= 1",
                    where=f"{_line(i)}, column {col}",
                    hint="token counts, batch size and tensor_parallel are positive integers",
                )
            out[col] = values.astype(np.int64)
        else:
            nonpos = values <= 0
            if nonpos.any():
                i = int(np.flatnonzero(nonpos.to_numpy())[0])
                raise ProfileError(
                    f"{col} is {raw[col].iloc[i]!r}; a measured time must be > 0",
                    where=f"{_line(i)}, column {col}",
                    hint="fix the measurement or delete the row",
                )
            out[col] = values.astype(float)
    if "e2e_time" not in out:
        out["e2e_time"] = np.nan
    out["line"] = out.index.to_numpy() + 2
    return out.reset_index(drop=True)


def _detect(frame: pd.DataFrame, time_unit: str, token_time: str) -> GroupUnits:
    reasons = []
    if time_unit == "auto":
        med = float(frame["prompt_time"].median())
        time_unit = "s" if med < SECONDS_IF_MEDIAN_BELOW else "ms"
        reasons.append(f"median prompt_time {med:.4g} -> {'seconds' if time_unit == 's' else 'milliseconds'}")
    if token_time == "auto":
        e2e = frame["e2e_time"]
        if e2e.notna().all():
            per = (e2e - (frame["prompt_time"] + frame["token_size"] * frame["token_time"])).abs() / e2e
            tot = (e2e - (frame["prompt_time"] + frame["token_time"])).abs() / e2e
            token_time = "per_token" if per.median() <= tot.median() else "total"
            reasons.append(
                f"e2e ~ prompt + token_size*token_time off by {per.median():.1%} (median), "
                f"e2e ~ prompt + token_time off by {tot.median():.1%} -> {token_time}"
            )
        else:
            sizes = np.log(frame["token_size"].to_numpy(float))
            if np.ptp(sizes) > 0:
                slope = float(np.polyfit(sizes, np.log(frame["token_time"].to_numpy(float)), 1)[0])
                token_time = "total" if slope > 0.5 else "per_token"
                reasons.append(f"no e2e_time; token_time grows as token_size^{slope:.2f} -> {token_time}")
            else:
                token_time = "per_token"
                reasons.append("no e2e_time and one token_size: assumed per_token")
    else:
        reasons.append(f"token_time given as {token_time}")
    return GroupUnits(time_unit=time_unit, token_time=token_time, reason="; ".join(reasons))


def normalise(raw: pd.DataFrame, *, time_unit: str = "auto", token_time: str = "auto") -> PerfTable:
    """Convert a validated raw table to seconds and per-iteration decode times, per group."""
    if time_unit not in TIME_UNITS:
        raise ProfileError(f"time_unit {time_unit!r}", where="time_unit", hint=f"use one of {', '.join(TIME_UNITS)}")
    if token_time not in TOKEN_TIME_MODES:
        raise ProfileError(
            f"token_time {token_time!r}", where="token_time", hint=f"use one of {', '.join(TOKEN_TIME_MODES)}"
        )
    parts = []
    units: dict[tuple[str, str, int], GroupUnits] = {}
    for key, frame in raw.groupby(["model", "hardware", "tensor_parallel"], sort=True):
        g = _detect(frame, time_unit, token_time)
        scale = 1e-3 if g.time_unit == "ms" else 1.0
        part = pd.DataFrame(
            {
                "model": frame["model"],
                "hardware": frame["hardware"],
                "tp": frame["tensor_parallel"].astype(np.int64),
                "prompt_size": frame["prompt_size"],
                "batch_size": frame["batch_size"],
                "token_size": frame["token_size"],
                "prompt_time_s": frame["prompt_time"] * scale,
                "token_time_s": frame["token_time"] * scale / (frame["token_size"] if g.token_time == "total" else 1),
                "e2e_s": frame["e2e_time"] * scale,
                "line": frame["line"],
            }
        )
        parts.append(part)
        units[(str(key[0]), str(key[1]), int(key[2]))] = g
    rows = pd.concat(parts).sort_values("line").reset_index(drop=True)
    return PerfTable(rows=rows, units=units)


def load_perf_table(source, *, time_unit: str = "auto", token_time: str = "auto") -> PerfTable:
    return normalise(read_perf_csv(source), time_unit=time_unit, token_time=token_time)
