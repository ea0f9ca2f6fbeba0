"""Chunked readers: a CSV or JSON-lines file as a stream of frames or records, with file line numbers and
read errors turned into TraceFormatError naming the line."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from planner.ingest.errors import TraceFormatError
from planner.ingest.formats.columns import first_bad
from planner.ingest.reader import open_binary


def csv_chunks(path: Path, dtypes: dict, chunk_rows: int, max_line_bytes: int):
    """(frame, file line of its first row, mask of blank rows, progress) per chunk of ``chunk_rows`` rows."""
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
                yield frame, first_line, blank, _progress(stream)
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
            hint="close every opening double quote"
            if quote
            else "every line needs the same number of comma-separated fields as the header",
        ) from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(
            f"the file is not UTF-8 text ({exc.reason})",
            line=stream.lines + 1,
            hint="save the trace as UTF-8 CSV; binary data cannot be ingested",
        ) from None


def json_chunks(path: Path, chunk_rows: int, max_line_bytes: int):
    """(records, their file line numbers, progress) per chunk of ``chunk_rows`` non-blank lines."""
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


def records_frame(records: list[dict], lines: np.ndarray, required: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records)
    frame.columns = [str(c).lower() for c in frame.columns]
    for key in required:
        if key not in frame.columns or frame[key].isna().any():
            missing = frame[key].isna().to_numpy() if key in frame.columns else np.ones(len(frame), bool)
            raise TraceFormatError(
                f"the key {key!r} is missing",
                line=int(lines[first_bad(missing)]),
                hint=f"every line needs {', '.join(required)}",
            )
    return frame
