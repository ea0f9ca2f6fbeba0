"""Format detection: work out (or check) a trace's format from its first bytes and its header."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from planner.ingest.errors import TraceFormatError
from planner.ingest.formats.spec import (
    AZURE_COLUMNS,
    BURSTGPT_COLUMNS,
    FORMAT_HELP,
    FORMATS,
    MOONCAKE_KEYS,
    NATIVE_ARRIVAL,
    NATIVE_INPUT,
    NATIVE_OUTPUT,
    Detected,
    expected_formats_hint,
)
from planner.ingest.reader import SNIFF_BYTES, check_text, sniff


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
        return _detect_jsonl(stripped, fmt)

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


def _detect_jsonl(stripped: str, fmt: str) -> Detected:
    """A JSON-lines trace: the format its first object's keys name (or check the one the user named)."""
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
