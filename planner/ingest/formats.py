"""Format detection and streaming parsers.

Every parser yields ``RawChunk`` frames with the same columns:

- ``t_ns`` int64: arrival on the file's own clock in nanoseconds (epoch for timestamps, or
  seconds-from-zero for numeric times); the normaliser later shifts it to the trace start
- ``input_tokens``, ``output_tokens`` int64 >= 0
- optionally ``region``, ``model``, ``tier``, ``session_id`` (str), ``deadline_ns`` (int64 on the
  same clock as ``t_ns``, or the ``NO_DEADLINE`` sentinel), ``failed`` (bool), ``hash_ids``
  (lists of int), and ``src:<column>`` string copies of columns a mapping asked to keep.

Bad values raise ``TraceFormatError`` naming the line, the column and the fix.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from planner.ingest.errors import TraceFormatError
from planner.ingest.limits import MAX_SECONDS
from planner.ingest.reader import DEFAULT_MAX_LINE_BYTES, SNIFF_BYTES, check_text, open_binary, sniff

FORMATS = ("azure", "burstgpt", "mooncake", "native")
TIERS = ("IW-F", "IW-N", "NIW")
NO_DEADLINE = np.iinfo(np.int64).min
INT32_MAX = 2**31 - 1

AZURE_COLUMNS = {"timestamp": "TIMESTAMP", "contexttokens": "ContextTokens", "generatedtokens": "GeneratedTokens"}
AZURE_OPTIONAL = {"numimages": "NumImages"}
BURSTGPT_COLUMNS = {"timestamp": "Timestamp", "request tokens": "Request tokens", "response tokens": "Response tokens"}
BURSTGPT_OPTIONAL = {"model": "Model", "total tokens": "Total tokens", "log type": "Log Type"}
MOONCAKE_KEYS = {"timestamp", "input_length", "output_length"}
MOONCAKE_OPTIONAL = {"hash_ids"}
NATIVE_ARRIVAL = ("arrival_s", "arrival", "timestamp", "time")
NATIVE_INPUT = ("input_tokens", "prompt_tokens")
NATIVE_OUTPUT = ("output_tokens", "completion_tokens")
NATIVE_OPTIONAL = ("region", "model", "tier", "deadline_s", "deadline", "slo_s", "session_id", "failed", "hash_ids")

FORMAT_HELP = {
    "azure": "TIMESTAMP,ContextTokens,GeneratedTokens (optional NumImages)",
    "burstgpt": "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
    "mooncake": 'JSON lines {"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}',
    "native": "arrival_s (or timestamp),input_tokens,output_tokens[,region,model,tier,deadline_s|slo_s,session_id]",
}


def expected_formats_hint() -> str:
    return "; ".join(f"{name}: {cols}" for name, cols in FORMAT_HELP.items())


@dataclass
class Detected:
    format: str
    kind: str  # "csv" or "jsonl"
    header: list[str] = field(default_factory=list)  # CSV header as written (JSONL: keys of line 1)


@dataclass
class RawChunk:
    frame: pd.DataFrame
    first_line: int
    progress: float  # fraction of the file read so far (0-1), best effort


def _csv_header(text: str) -> list[str]:
    first = text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""
    return [c.strip() for c in next(csv.reader([first]))] if first else []


def detect(path: str | Path, fmt: str = "auto") -> Detected:
    """Work out the format from the first bytes (or check the one the user named)."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic == b"PAR1":
        if fmt not in ("auto", "native"):
            raise TraceFormatError(
                f"you chose format {fmt!r}, but the file is Parquet",
                line=None,
                hint="use --format auto or native for a normalised Parquet trace",
            )
        return _detect_parquet(Path(path))
    head = sniff(path)
    text = check_text(head)
    if b"\n" not in head and len(head) >= SNIFF_BYTES:
        raise TraceFormatError(
            f"the first line is longer than {SNIFF_BYTES:,} bytes",
            line=1,
            hint="one request per line, starting with a header; check the file is CSV or JSON lines",
        )
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("{"):
        line = stripped.splitlines()[0]
        try:
            first = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(
                f"the first line looks like JSON but does not parse ({exc.msg})",
                line=1,
                hint="one JSON object per line (JSON lines), no pretty-printing",
            ) from None
        keys = {k.lower() for k in first}
        if MOONCAKE_KEYS <= keys:
            found = "mooncake"
        elif keys & set(NATIVE_INPUT) and keys & set(NATIVE_OUTPUT) and keys & set(NATIVE_ARRIVAL):
            found = "native"
        else:
            found = None
        if fmt != "auto" and fmt not in ("mooncake", "native"):
            raise TraceFormatError(
                f"you chose format {fmt!r} (a CSV), but the file is JSON lines",
                line=1,
                hint="use --format auto, mooncake or native",
            )
        chosen = found if fmt == "auto" else fmt
        if chosen is None:
            raise TraceFormatError(
                f"JSON lines with keys {sorted(first)} match no known trace format",
                line=1,
                hint="Mooncake lines need timestamp, input_length, output_length; native lines need "
                "arrival_s (or timestamp), input_tokens, output_tokens",
            )
        _check_json_keys(chosen, first)
        return Detected(chosen, "jsonl", list(first))

    header = _csv_header(text)
    lower = [h.lower() for h in header]
    if len(header) < 2:
        raise TraceFormatError(
            f"the first line {text.splitlines()[0][:80]!r} is not a CSV header",
            line=1,
            hint="the first line must name the columns; expected one of: " + expected_formats_hint(),
        )
    candidates = {
        "azure": set(AZURE_COLUMNS) <= set(lower),
        "burstgpt": set(BURSTGPT_COLUMNS) <= set(lower),
        "native": bool(
            set(lower) & set(NATIVE_ARRIVAL) and set(lower) & set(NATIVE_INPUT) and set(lower) & set(NATIVE_OUTPUT)
        ),
    }
    if fmt == "auto":
        found = next((name for name, ok in candidates.items() if ok), None)
        if found is None:
            raise TraceFormatError(
                f"the header {header} matches no known trace format",
                line=1,
                hint="rename the columns to one of: " + expected_formats_hint(),
            )
    elif fmt == "mooncake":
        raise TraceFormatError(
            "you chose format 'mooncake' (JSON lines), but the file is a CSV",
            line=1,
            hint="use --format auto, or convert the file to JSON lines",
        )
    elif fmt in FORMATS:
        found = fmt
    else:
        raise TraceFormatError(f"unknown format {fmt!r}", hint=f"use one of auto, {', '.join(FORMATS)}")
    _check_csv_columns(found, header)
    return Detected(found, "csv", header)


def _check_csv_columns(fmt: str, header: list[str]) -> None:
    lower = [h.lower() for h in header]
    dupes = sorted({h for h in lower if lower.count(h) > 1})
    if dupes:
        raise TraceFormatError(
            f"duplicate column(s) {dupes} in the header", line=1, hint="give every column a distinct name"
        )
    if fmt == "azure":
        required = AZURE_COLUMNS
    elif fmt == "burstgpt":
        required = BURSTGPT_COLUMNS
    else:
        missing = [group[0] for group in (NATIVE_ARRIVAL, NATIVE_INPUT, NATIVE_OUTPUT) if not set(lower) & set(group)]
        if missing:
            raise TraceFormatError(
                f"missing column(s) {missing} for the native format",
                line=1,
                hint="native CSV needs " + FORMAT_HELP["native"],
            )
        return  # native: unknown columns are checked against the mapping later (see native_columns)
    missing = [name for key, name in required.items() if key not in lower]
    if missing:
        raise TraceFormatError(
            f"missing column(s) {missing} for the {fmt} format (found {header})",
            line=1,
            hint=f"{fmt} needs " + FORMAT_HELP[fmt],
        )


def _check_json_keys(fmt: str, first: dict) -> None:
    keys = {k.lower() for k in first}
    if fmt == "mooncake":
        missing = sorted(MOONCAKE_KEYS - keys)
        if missing:
            raise TraceFormatError(
                f"missing key(s) {missing} for the mooncake format",
                line=1,
                hint="mooncake needs " + FORMAT_HELP["mooncake"],
            )
    else:
        for group in (NATIVE_ARRIVAL, NATIVE_INPUT, NATIVE_OUTPUT):
            if not keys & set(group):
                raise TraceFormatError(
                    f"missing key {group[0]!r} for the native format",
                    line=1,
                    hint="native needs " + FORMAT_HELP["native"],
                )


# ---------------------------------------------------------------------------------------------
# column converters (vectorised, with the first bad line named)


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def token_column(values: pd.Series, name: str, first_line: int) -> np.ndarray:
    """Whole numbers >= 0 that fit int32, as int64."""
    if values.dtype.kind in "iu":
        arr = values.to_numpy(dtype=np.int64)
    else:
        raw = values
        num = pd.to_numeric(raw, errors="coerce")
        bad = num.isna().to_numpy()
        if bad.any():
            i = _first_bad(bad)
            shown = raw.iloc[i]
            what = (
                "is empty"
                if shown is None or (isinstance(shown, float) and np.isnan(shown)) or str(shown).strip() == ""
                else f"has {str(shown)[:40]!r}, which is not a number"
            )
            raise TraceFormatError(
                f"{what}",
                line=first_line + i,
                column=name,
                hint=f"{name} must be a whole number of tokens >= 0 on every line; fix or remove the line",
            )
        num = num.to_numpy(dtype=np.float64)
        frac = num != np.floor(num)
        if frac.any():
            i = _first_bad(frac)
            raise TraceFormatError(
                f"has {num[i]!r}, which is not a whole number",
                line=first_line + i,
                column=name,
                hint=f"{name} counts tokens: use whole numbers",
            )
        arr = num.astype(np.int64)
    neg = arr < 0
    if neg.any():
        i = _first_bad(neg)
        raise TraceFormatError(
            f"is negative ({arr[i]})",
            line=first_line + i,
            column=name,
            hint=f"{name} must be >= 0; fix or remove the line",
        )
    big = arr > INT32_MAX
    if big.any():
        i = _first_bad(big)
        raise TraceFormatError(
            f"is too large ({arr[i]})", line=first_line + i, column=name, hint=f"{name} must be below 2^31"
        )
    return arr


def seconds_column(values: pd.Series, name: str, first_line: int, *, scale: float = 1.0) -> np.ndarray:
    """Numeric times (seconds, or ``scale`` seconds per unit) -> int64 nanoseconds."""
    num = pd.to_numeric(values, errors="coerce")
    arr = num.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = _first_bad(bad)
        raise TraceFormatError(
            f"has {str(values.iloc[i])[:40]!r}, which is not a time",
            line=first_line + i,
            column=name,
            hint=f"{name} must be a number of seconds (or an ISO timestamp) on every line",
        )
    neg = arr < 0
    if neg.any():
        i = _first_bad(neg)
        raise TraceFormatError(
            f"is negative ({arr[i]})",
            line=first_line + i,
            column=name,
            hint="times are seconds from the start of the trace, >= 0",
        )
    huge = arr * scale > MAX_SECONDS
    if huge.any():
        i = _first_bad(huge)
        raise TraceFormatError(
            f"is too large ({str(values.iloc[i])[:40]})",
            line=first_line + i,
            column=name,
            hint=f"times are seconds from the start of the trace, below {MAX_SECONDS:.0e} (about 300 years)",
        )
    return np.round(arr * (scale * 1e9)).astype(np.int64)


def timestamp_column(values: pd.Series, name: str, first_line: int) -> np.ndarray:
    """ISO-8601-ish timestamps, mixed precision and zones allowed (naive = UTC) -> epoch ns."""
    parsed = pd.to_datetime(values, format="ISO8601", utc=True, errors="coerce")
    bad = parsed.isna().to_numpy()
    if bad.any():
        i = _first_bad(bad)
        raise TraceFormatError(
            f"has {str(values.iloc[i])[:40]!r}, which is not a timestamp",
            line=first_line + i,
            column=name,
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
    bad = ~text.isin(TIERS).to_numpy()
    if bad.any():
        i = _first_bad(bad)
        raise TraceFormatError(
            f"has {str(values.iloc[i])[:40]!r}, which is not a tier",
            line=first_line + i,
            column=name,
            hint="tier must be one of IW-F, IW-N, NIW (or empty for IW-F)",
        )
    return text.to_numpy(dtype=object)


def bool_column(values: pd.Series, name: str, first_line: int) -> np.ndarray:
    text = values.astype("string").str.strip().str.lower().fillna("")
    mapping = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False, "": False}
    bad = ~text.isin(list(mapping)).to_numpy()
    if bad.any():
        i = _first_bad(bad)
        raise TraceFormatError(
            f"has {str(values.iloc[i])[:40]!r}, which is not true/false",
            line=first_line + i,
            column=name,
            hint="use 1/0 or true/false",
        )
    return text.map(mapping).to_numpy(dtype=bool)


def string_column(values: pd.Series, default: str) -> np.ndarray:
    text = values.astype("string").str.strip()
    return text.fillna(default).replace({"": default}).to_numpy(dtype=object)


# ---------------------------------------------------------------------------------------------
# CSV parsers


def _csv_chunks(path: Path, usecols: list[str], dtypes: dict, chunk_rows: int, max_line_bytes: int):
    stream = open_binary(path, max_line_bytes=max_line_bytes)
    try:
        with _csv_errors(stream):  # the reader parses its first block already when it is made
            reader = pd.read_csv(
                io.BufferedReader(stream, buffer_size=1 << 20),
                index_col=False,
                dtype=dtypes,
                chunksize=chunk_rows,
                skip_blank_lines=False,
                encoding="utf-8-sig",
                skipinitialspace=True,
                engine="c",
                on_bad_lines="error",
            )
        first_line = 2
        with reader:
            while True:
                try:
                    with _csv_errors(stream):
                        frame = next(reader)
                except StopIteration:
                    break
                n = len(frame)
                # Blank lines come through as all-empty rows: skip them but keep line numbers right.
                blank = frame.isna().all(axis=1).to_numpy()
                progress = stream.bytes_read / stream.size_hint if stream.size_hint and not stream._compressed else 0.0
                yield frame, first_line, blank, min(progress, 1.0)
                first_line += n
    finally:
        stream.close()


@contextlib.contextmanager
def _csv_errors(stream):
    """pandas' parser and decoding errors as TraceFormatError naming the line."""
    try:
        yield
    except pd.errors.ParserError as exc:
        found = re.search(r"(line|row) (\d+)", str(exc))
        line = (int(found.group(2)) + (found.group(1) == "row")) if found else None  # data row 1 = line 2
        quote = "EOF inside string" in str(exc)
        raise TraceFormatError(
            "a quoted field is never closed" if quote else f"the CSV does not parse: {exc}",
            line=line,
            hint="close every opening double quote" if quote else
            "every line needs the same number of comma-separated fields as the header",
        ) from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(
            f"the file is not UTF-8 text ({exc.reason})",
            line=stream.lines + 1,
            hint="save the trace as UTF-8 CSV; binary data cannot be ingested",
        ) from None


def _resolve(header: list[str], names: Sequence[str]) -> str | None:
    lower = {h.lower(): h for h in header}
    for name in names:
        if name.lower() in lower:
            return lower[name.lower()]
    return None


def _keep_columns(header: list[str], keep: Sequence[str]) -> dict[str, str]:
    out = {}
    for name in keep:
        actual = _resolve(header, [name])
        if actual is None:
            raise TraceFormatError(
                f"the mapping refers to column {name!r}, which the file does not have",
                line=1,
                hint=f"map from one of the file's columns: {header}",
            )
        out[name] = actual
    return out


def _drop_blank(frame: pd.DataFrame, blank: np.ndarray) -> pd.DataFrame:
    return frame[~blank].reset_index(drop=True) if blank.any() else frame


def parse_azure(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 1_000_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    ts = _resolve(det.header, ["TIMESTAMP"])
    ctx = _resolve(det.header, ["ContextTokens"])
    gen = _resolve(det.header, ["GeneratedTokens"])
    kept = _keep_columns(det.header, keep)
    _reject_unknown_columns(
        det.header, {"timestamp", "contexttokens", "generatedtokens", "numimages"}, kept, "azure",
        "azure traces have " + FORMAT_HELP["azure"] + "; remove the extra columns or use the native format",
    )
    usecols = [ts, ctx, gen, *kept.values()]
    dtypes = {ts: str, **{c: str for c in kept.values()}}
    for frame, first, blank, prog in _csv_chunks(path, usecols, dtypes, chunk_rows, max_line_bytes):
        out = pd.DataFrame(
            {
                "t_ns": _timed(frame[ts], ts, first, blank),
                "input_tokens": _tok(frame[ctx], ctx, first, blank),
                "output_tokens": _tok(frame[gen], gen, first, blank),
            }
        )
        yield RawChunk(_kept(out, frame, kept, blank), first, prog)


def _line_numbers(first: int, blank: np.ndarray) -> np.ndarray:
    return first + np.flatnonzero(~blank)


def _timed(values: pd.Series, name: str, first: int, blank: np.ndarray) -> np.ndarray:
    """Times of the non-blank rows; errors still name the true line."""
    sub = values[~blank].reset_index(drop=True)
    parse = seconds_column if looks_numeric(sub) else timestamp_column
    return _relined(parse, _line_numbers(first, blank), sub, name, 0)


def _tok(values: pd.Series, name: str, first: int, blank: np.ndarray) -> np.ndarray:
    return _relined(token_column, _line_numbers(first, blank), values[~blank].reset_index(drop=True), name, 0)


def parse_burstgpt(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 1_000_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    ts = _resolve(det.header, ["Timestamp"])
    req = _resolve(det.header, ["Request tokens"])
    resp = _resolve(det.header, ["Response tokens"])
    model = _resolve(det.header, ["Model"])
    kept = _keep_columns(det.header, keep)
    _reject_unknown_columns(
        det.header, set(BURSTGPT_COLUMNS) | set(BURSTGPT_OPTIONAL), kept, "burstgpt",
        "BurstGPT traces have " + FORMAT_HELP["burstgpt"],
    )
    usecols = list(dict.fromkeys([c for c in (ts, req, resp, model) if c] + list(kept.values())))
    dtypes = {c: str for c in kept.values()}
    if model:
        dtypes[model] = str
    for frame, first, blank, prog in _csv_chunks(path, usecols, dtypes, chunk_rows, max_line_bytes):
        t = _timed(frame[ts], ts, first, blank)
        out_tokens = _tok(frame[resp], resp, first, blank)
        out = pd.DataFrame(
            {
                "t_ns": t,
                "input_tokens": _tok(frame[req], req, first, blank),
                "output_tokens": out_tokens,
                "failed": out_tokens == 0,
            }
        )
        if model:
            out["model"] = string_column(frame[model][~blank], "default")
        yield RawChunk(_kept(out, frame, kept, blank), first, prog)


def native_columns(header: list[str], keep: Sequence[str] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """Map the native schema's names to the file's column names, and the mapped ``keep`` columns to theirs;
    reject unknown columns."""
    cols = {
        "arrival": _resolve(header, NATIVE_ARRIVAL),
        "input_tokens": _resolve(header, NATIVE_INPUT),
        "output_tokens": _resolve(header, NATIVE_OUTPUT),
    }
    for opt in NATIVE_OPTIONAL:
        actual = _resolve(header, [opt])
        if actual:
            cols[opt] = actual
    if "deadline_s" in cols and "deadline" in cols:
        raise TraceFormatError("both deadline_s and deadline columns are present", line=1, hint="keep one of them")
    kept = _keep_columns(header, keep)
    used = set(cols.values()) | set(kept.values())
    unknown = [h for h in header if h not in used]
    if unknown:
        raise TraceFormatError(
            f"unknown column(s) {unknown} for the native format",
            line=1,
            hint="native columns are arrival_s (or timestamp), input_tokens, output_tokens and optional "
            f"{', '.join(NATIVE_OPTIONAL)}; rename or remove the others, or map them with a column mapping",
        )
    return cols, kept


def _native_frame(
    frame: pd.DataFrame, cols: dict[str, str], kept: dict[str, str], first: int, blank: np.ndarray, time_mode: list
) -> pd.DataFrame:
    arrival = frame[cols["arrival"]]
    sub = arrival[~blank].reset_index(drop=True)
    numeric = looks_numeric(sub) if len(sub) else True
    if time_mode[0] is None:
        time_mode[0] = "seconds" if numeric else "timestamp"
    elif (time_mode[0] == "seconds") != numeric:
        lines = _line_numbers(first, blank)
        raise TraceFormatError(
            f"mixes numeric seconds and timestamps (this file started with {time_mode[0]})",
            line=int(lines[0]),
            column=cols["arrival"],
            hint="use one kind of arrival time throughout the file",
        )
    t = _timed(arrival, cols["arrival"], first, blank)
    out = pd.DataFrame(
        {
            "t_ns": t,
            "input_tokens": _tok(frame[cols["input_tokens"]], cols["input_tokens"], first, blank),
            "output_tokens": _tok(frame[cols["output_tokens"]], cols["output_tokens"], first, blank),
        }
    )
    lines = _line_numbers(first, blank)

    def sub_col(name):
        return frame[cols[name]][~blank].reset_index(drop=True)

    for name, default in (("region", "region-1"), ("model", "default"), ("session_id", "")):
        if name in cols:
            out[name] = string_column(sub_col(name), default)
    if "tier" in cols:
        out["tier"] = _relined(tier_column, lines, sub_col("tier"), cols["tier"], 0)
    if "failed" in cols:
        out["failed"] = _relined(bool_column, lines, sub_col("failed"), cols["failed"], 0)
    for name in ("deadline_s", "deadline", "slo_s"):
        if name not in cols:
            continue
        values = sub_col(name)
        empty = values.isna().to_numpy() | (values.astype("string").str.strip() == "").fillna(True).to_numpy()
        deadline = np.full(len(values), NO_DEADLINE, dtype=np.int64)
        if (~empty).any():
            present = values[~empty].reset_index(drop=True)
            idx = np.flatnonzero(~empty)
            as_timestamp = name == "deadline" and time_mode[0] == "timestamp" and not looks_numeric(present)
            parse = timestamp_column if as_timestamp else seconds_column
            vals = _relined(parse, lines[idx], present, cols[name], 0)
            if name == "slo_s":
                vals = vals + t[idx]
            deadline[idx] = vals
        out["deadline_ns"] = deadline
    if "hash_ids" in cols:
        out["hash_ids"] = _hash_lists(sub_col("hash_ids"), lines)
    return _kept(out, frame, kept, blank)


HASH_MAX = 2**63 - 1


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
            raise TraceFormatError(f"hash_ids has {str(x)[:40]!r}, which is not an integer", line=0,
                                   column="hash_ids", hint="hash_ids is a list of integer block hashes, e.g. [1, 2, 3]")
        n = int(x)
        if abs(n) > HASH_MAX:
            raise TraceFormatError(f"hash_ids has {str(x)[:40]}, beyond 64 bits", line=0, column="hash_ids",
                                   hint="block hashes must fit in a signed 64-bit integer")
        out.append(n)
    return out


def _hash_lists(values, lines: np.ndarray) -> list[list[int]]:
    out = []
    for i, v in enumerate(values):
        try:
            out.append(_hash_list(v))
        except TraceFormatError as exc:
            raise TraceFormatError(exc.message, line=int(lines[i]) if i < len(lines) else None, column=exc.column,
                                   hint=exc.hint) from None
    return out


def parse_native_csv(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 1_000_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    cols, kept = native_columns(det.header, keep)
    text_cols = [c for k, c in cols.items() if k not in ("input_tokens", "output_tokens")]
    dtypes = {c: str for c in text_cols + list(kept.values())}
    usecols = list(dict.fromkeys(list(cols.values()) + list(kept.values())))
    mode: list = [None]
    for frame, first, blank, prog in _csv_chunks(path, usecols, dtypes, chunk_rows, max_line_bytes):
        yield RawChunk(_native_frame(frame, cols, kept, first, blank, mode), first, prog)


# ---------------------------------------------------------------------------------------------
# JSON lines parsers


def _json_chunks(path: Path, chunk_rows: int, max_line_bytes: int):
    stream = open_binary(path, max_line_bytes=max_line_bytes)
    text = io.TextIOWrapper(io.BufferedReader(stream, buffer_size=1 << 20), encoding="utf-8-sig")
    try:
        line_no = 0
        records: list = []
        lines: list[int] = []
        while True:
            try:
                raw = text.readline()
            except UnicodeDecodeError as exc:
                raise TraceFormatError(
                    f"the file is not UTF-8 text ({exc.reason})",
                    line=line_no + 1,
                    hint="save the trace as UTF-8 JSON lines",
                ) from None
            if not raw:
                break
            line_no += 1
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise TraceFormatError(
                    f"not valid JSON ({exc.msg} at character {exc.pos + 1})",
                    line=line_no,
                    hint="one complete JSON object per line",
                ) from None
            if not isinstance(obj, dict):
                raise TraceFormatError(
                    "the line is JSON but not an object",
                    line=line_no,
                    hint='each line must be an object like {"timestamp": 0, ...}',
                )
            records.append(obj)
            lines.append(line_no)
            if len(records) >= chunk_rows:
                yield records, np.asarray(lines), _progress(stream)
                records, lines = [], []
        if records:
            yield records, np.asarray(lines), _progress(stream)
    finally:
        text.close()


def _progress(stream) -> float:
    if stream.size_hint and not stream._compressed:
        return min(stream.bytes_read / stream.size_hint, 1.0)
    return 0.0


def _records_frame(records: list[dict], lines: np.ndarray, required: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records)
    frame.columns = [str(c).lower() for c in frame.columns]
    for key in required:
        if key not in frame.columns or frame[key].isna().any():
            missing = frame[key].isna().to_numpy() if key in frame.columns else np.ones(len(frame), bool)
            raise TraceFormatError(
                f"the key {key!r} is missing",
                line=int(lines[_first_bad(missing)]),
                hint=f"every line needs {', '.join(required)}",
            )
    return frame


def _relined(fn, lines: np.ndarray, *args, **kwargs):
    """``fn(*args, **kwargs)`` with a TraceFormatError's row index (0-based in what ``fn`` saw) turned into the
    file's line number ``lines[index]`` (kept as is when missing or outside ``lines``)."""
    try:
        return fn(*args, **kwargs)
    except TraceFormatError as exc:
        line = int(lines[exc.line]) if exc.line is not None and 0 <= exc.line < len(lines) else exc.line
        raise TraceFormatError(exc.message, line=line, column=exc.column, hint=exc.hint) from None


def _kept(out: pd.DataFrame, frame: pd.DataFrame, kept: dict[str, str], blank: np.ndarray) -> pd.DataFrame:
    """Copy the mapped source columns (``keep``) of the non-blank rows as ``src:<name>`` strings."""
    for name, actual in kept.items():
        out[f"src:{name}"] = string_column(frame[actual][~blank], "")
    return out


def _reject_unknown_columns(header: list[str], known: set[str], kept: dict[str, str], fmt: str, hint: str) -> None:
    unknown = [h for h in header if h.lower() not in known and h not in kept.values()]
    if unknown:
        raise TraceFormatError(f"unknown column(s) {unknown} for the {fmt} format", line=1, hint=hint)


def parse_mooncake(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 200_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    for records, lines, prog in _json_chunks(path, chunk_rows, max_line_bytes):
        frame = _records_frame(records, lines, ["timestamp", "input_length", "output_length"])
        unknown = [c for c in frame.columns if c not in MOONCAKE_KEYS | MOONCAKE_OPTIONAL | {k.lower() for k in keep}]
        if unknown:
            bad = frame[unknown].notna().any(axis=1).to_numpy()
            raise TraceFormatError(
                f"unknown key(s) {unknown} for the mooncake format",
                line=int(lines[_first_bad(bad)]),
                hint="mooncake lines have timestamp (ms), input_length, output_length, hash_ids",
            )
        out = pd.DataFrame(
            {
                "t_ns": _relined(seconds_column, lines, frame["timestamp"], "timestamp", 0, scale=1e-3),  # ms
                "input_tokens": _relined(token_column, lines, frame["input_length"], "input_length", 0),
                "output_tokens": _relined(token_column, lines, frame["output_length"], "output_length", 0),
            }
        )
        if "hash_ids" in frame.columns:
            out["hash_ids"] = _hash_lists(frame["hash_ids"], lines)
        for name in keep:
            out[f"src:{name}"] = string_column(
                frame[name.lower()] if name.lower() in frame else pd.Series([""] * len(frame)), ""
            )
        yield RawChunk(out, int(lines[0]), prog)


def parse_native_jsonl(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 200_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    mode: list = [None]
    for records, lines, prog in _json_chunks(path, chunk_rows, max_line_bytes):
        frame = pd.DataFrame.from_records(records)
        frame.columns = [str(c) for c in frame.columns]
        cols, kept = native_columns(list(frame.columns), keep)
        for key in ("arrival", "input_tokens", "output_tokens"):
            missing = frame[cols[key]].isna().to_numpy()
            if missing.any():
                raise TraceFormatError(
                    f"the key {cols[key]!r} is missing",
                    line=int(lines[_first_bad(missing)]),
                    hint="every line needs arrival_s (or timestamp), input_tokens, output_tokens",
                )
        # Lines are all non-blank here, so "blank" is empty and line numbers come from ``lines``.
        frame = frame.astype(
            {c: object for c in frame.columns if c not in (cols["input_tokens"], cols["output_tokens"])}
        )
        out = _relined(_native_frame, lines, frame, cols, kept, 0, np.zeros(len(frame), bool), mode)
        yield RawChunk(out, int(lines[0]), prog)


def _detect_parquet(path: Path) -> Detected:
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for damaged files
        raise TraceFormatError(
            f"the Parquet file cannot be read ({exc})",
            hint="write it again, e.g. with `manage.py synth_trace --out FILE.parquet`",
        ) from None
    missing = [c for c in ("arrival_s", "input_tokens", "output_tokens") if c not in names]
    if missing:
        raise TraceFormatError(
            f"the Parquet file lacks column(s) {missing} (it has {names})",
            hint="a Parquet trace needs the normalised columns (see docs/traces.md)",
        )
    return Detected("native", "parquet", names)


def parse_parquet(
    path: Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 500_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    """A normalised (or native-columned) Parquet trace, e.g. from the synthesiser. "Lines" are rows + 1."""
    import pyarrow.parquet as pq

    cols, kept = native_columns(det.header, keep)
    pf = pq.ParquetFile(path)
    total = max(pf.metadata.num_rows, 1)
    first = 2
    mode: list = [None]
    for batch in pf.iter_batches(batch_size=chunk_rows):
        frame = batch.to_pandas()
        for name in frame.columns:
            if isinstance(frame[name].dtype, pd.CategoricalDtype):
                frame[name] = frame[name].astype(object)
        if cols.get("deadline_s") in frame.columns:  # NaN means "no deadline" in the contract
            frame[cols["deadline_s"]] = (
                frame[cols["deadline_s"]].astype(object).where(frame[cols["deadline_s"]].notna(), "")
            )
        n = len(frame)
        out = _native_frame(frame, cols, kept, first, np.zeros(n, bool), mode)
        first += n
        yield RawChunk(out, first - n, min((first - 2) / total, 1.0))


def parse(
    path: str | Path,
    det: Detected,
    *,
    keep: Sequence[str] = (),
    chunk_rows: int = 1_000_000,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawChunk]:
    path = Path(path)
    kw = {"keep": keep, "chunk_rows": chunk_rows, "max_line_bytes": max_line_bytes}
    if det.kind == "parquet":
        return parse_parquet(path, det, **kw)
    if det.format == "azure":
        return parse_azure(path, det, **kw)
    if det.format == "burstgpt":
        return parse_burstgpt(path, det, **kw)
    if det.format == "mooncake":
        return parse_mooncake(path, det, **{**kw, "chunk_rows": min(chunk_rows, 200_000)})
    if det.kind == "jsonl":
        return parse_native_jsonl(path, det, **{**kw, "chunk_rows": min(chunk_rows, 200_000)})
    return parse_native_csv(path, det, **kw)
