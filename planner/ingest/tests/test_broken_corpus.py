"""A corpus of broken files, generated here: each gives a TraceFormatError naming the problem, the
line and the fix, and leaves nothing behind (no output file, no staging directory)."""

from __future__ import annotations

import gzip
import os

import pytest

from planner.ingest.errors import TraceFormatError
from planner.ingest.pipeline import ingest
from planner.ingest.transforms import TransformOptions

AZ = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
GOOD_ROWS = "".join(f"2024-05-10 00:00:{i:02d},{100 + i},{10 + i}\n" for i in range(50))


def _gz_truncated() -> bytes:
    data = gzip.compress((AZ + GOOD_ROWS * 400).encode())
    return data[: len(data) // 2]


CORPUS = {
    # name: (bytes, expected substring of the message, expected line, expected substring of the hint)
    "empty": (b"", "empty", 1, "header row"),
    "whitespace_only": (b"\n\n  \n", "empty", 1, "header row"),
    "header_only": (AZ.encode(), "no requests", 2, "one request per line"),
    "binary_garbage": (bytes(range(256)) * 64, "binary", 1, "as text"),
    "invalid_utf8": (AZ.encode() + b"2024-05-10 00:00:00,1\xff\xfe,2\n", "not UTF-8", 2, "UTF-8"),
    "unknown_header": (b"when,prompt,completion\n1,2,3\n", "matches no known trace format", 1, "rename the columns"),
    "missing_column": (b"arrival_s,input_tokens\n1,2\n", "matches no known trace format", 1, "native"),
    "unknown_native_column": (
        b"arrival_s,input_tokens,output_tokens,colour\n0,1,1\n",
        "unknown column(s) ['colour']",
        1,
        "rename or remove",
    ),
    "non_numeric_tokens": (
        (AZ + GOOD_ROWS + "2024-05-10 00:01:00,abc,3\n").encode(),
        "'abc', which is not a number",
        52,
        "whole number",
    ),
    "negative_tokens": ((AZ + GOOD_ROWS + "2024-05-10 00:01:00,5,-3\n").encode(), "negative", 52, ">= 0"),
    "fractional_tokens": ((AZ + "2024-05-10 00:01:00,5.5,3\n").encode(), "not a whole number", 2, "whole numbers"),
    "empty_token_cell": ((AZ + GOOD_ROWS + "2024-05-10 00:01:00,,3\n").encode(), "is empty", 52, "whole number"),
    "bad_timestamp": ((AZ + GOOD_ROWS[:200] + "yesterday,5,3\n").encode(), "not a timestamp", None, "ISO 8601"),
    "negative_seconds": (b"arrival_s,input_tokens,output_tokens\n0,1,1\n-5,1,1\n", "negative", 3, ">= 0"),
    "bad_tier": (
        b"arrival_s,input_tokens,output_tokens,tier\n0,1,1,IW-F\n1,1,1,gold\n",
        "not a tier",
        3,
        "IW-F, IW-N, NIW",
    ),
    "ragged_row": (
        (AZ + "2024-05-10 00:00:00,1,2\n2024-05-10 00:00:01,1,2,3,4\n").encode(),
        "does not parse",
        None,
        "same number",
    ),
    "truncated_gzip": (_gz_truncated(), "gzip stream is truncated", None, "gzip -t"),
    "huge_single_line": (
        b"arrival_s,input_tokens,output_tokens\n" + b"0," + b"9" * (1024 * 1024 + 10) + b",1\n",
        "longer than",
        2,
        "one request per line",
    ),
    "huge_line_no_newlines": (b"x" * (3 * 1024 * 1024), "longer than", 1, "one request per line"),
    "bad_json_line": (
        b'{"timestamp": 0, "input_length": 1, "output_length": 1}\n{"timestamp": 1, "input_len\n',
        "not valid JSON",
        2,
        "one complete JSON object",
    ),
    "json_missing_key": (
        b'{"timestamp": 0, "input_length": 1, "output_length": 1}\n{"timestamp": 5, "input_length": 2}\n',
        "'output_length' is missing",
        2,
        "every line needs",
    ),
    # a whole later chunk (ingest reads at least 1,000 lines per chunk) without a required key: the keys of that
    # chunk, not of line 1, are what is missing (was a KeyError: None)
    "json_native_chunk_missing_key": (
        b"".join(b'{"arrival_s": %d, "input_tokens": 3, "output_tokens": 2}\n' % i for i in range(1000))
        + b"".join(b'{"arrival_s": %d, "input_tokens": 3}\n' % i for i in range(1000, 2500)),
        "'output_tokens' is missing",
        1001,
        "every line needs",
    ),
    "json_not_a_trace": (b'{"a": 1}\n', "match no known trace format", 1, "Mooncake lines need"),
    "broken_parquet": (b"PAR1" + bytes(200), "Parquet file cannot be read", None, "write it again"),
    "mixed_native_times": (
        b"arrival_s,input_tokens,output_tokens\n0,1,1\n" + b"1,1,1\n" * 10 + b"2024-01-01T00:00:00Z,1,1\n",
        "not a time",
        13,
        "seconds",
    ),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_each_broken_file_gets_a_clear_error_and_leaves_nothing_behind(tmp_path, name):
    data, message, line, hint = CORPUS[name]
    src = tmp_path / "in" / f"{name}.dat"
    src.parent.mkdir()
    src.write_bytes(data)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    dst = out_dir / "trace.parquet"
    with pytest.raises(TraceFormatError) as info:
        ingest(src, dst, chunk_rows=20)
    err = info.value
    assert message in err.message, err
    assert hint in err.hint, err
    if line is not None:
        assert err.line == line, err
    assert err.where  # always says where, at least "file"
    assert os.listdir(out_dir) == []  # no output and no staging directory left behind


def test_an_error_in_a_later_chunk_names_the_true_line(tmp_path):
    rows = "".join(f"{i},{i},{i}\n" for i in range(1000))
    src = tmp_path / "late.csv"
    src.write_text("arrival_s,input_tokens,output_tokens\n" + rows + "1000,x,1\n")
    with pytest.raises(TraceFormatError) as info:
        ingest(src, tmp_path / "o.parquet", chunk_rows=64)
    assert info.value.line == 1002 and info.value.column == "input_tokens"


def test_the_user_chosen_format_must_match_the_file(tmp_path):
    src = tmp_path / "a.csv"
    src.write_text(AZ + GOOD_ROWS)
    with pytest.raises(TraceFormatError, match="missing column"):
        ingest(src, tmp_path / "o.parquet", fmt="burstgpt")
    with pytest.raises(TraceFormatError, match="is a CSV"):
        ingest(src, tmp_path / "o.parquet", fmt="mooncake")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"rate": 0}, "rate must be at least 1e-06"),
        ({"rate": "lots"}, "not a number"),
        ({"time_scale": -1}, "time_scale must be at least 1e-06"),
        ({"tier": "gold"}, "not a tier"),
        ({"region": {"east": -1, "west": 1}}, "ratio"),
        ({"model": {"column": "nope"}}, "does not have"),
        ({"speed": 2}, "unknown option"),
    ],
)
def test_bad_options_are_rejected_before_anything_is_written(tmp_path, options, message):
    src = tmp_path / "a.csv"
    src.write_text(AZ + GOOD_ROWS)
    with pytest.raises(TraceFormatError, match=message):
        ingest(src, tmp_path / "o.parquet", options=options)
    assert not (tmp_path / "o.parquet").exists()


def test_a_mapping_that_yields_an_invalid_tier_is_rejected(tmp_path):
    src = tmp_path / "b.csv"
    src.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,ChatGPT,1,1,2,Odd log\n")
    with pytest.raises(TraceFormatError, match="not a tier"):
        ingest(src, tmp_path / "o.parquet", options={"tier": {"column": "Log Type"}})
    assert TransformOptions.from_dict({"tier": {"column": "Log Type", "default": "NIW"}}).tier.default == "NIW"


def test_thinning_everything_away_is_an_error_not_an_empty_trace(tmp_path):
    src = tmp_path / "a.csv"
    src.write_text(AZ + "".join(GOOD_ROWS.splitlines(keepends=True)[:3]))
    with pytest.raises(TraceFormatError, match="no requests are left"):
        ingest(src, tmp_path / "o.parquet", options={"rate": 1e-4})
    assert os.listdir(tmp_path) == ["a.csv"]
