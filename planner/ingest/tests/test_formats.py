"""Parsers and normalisation on the real shared traces and on generated files of every format."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.ingest.normalised import read_trace
from planner.ingest.pipeline import ingest

# the real public traces, bundled (fixtures/traces/SOURCES.md)
TRACES = Path(__file__).resolve().parents[3] / "fixtures" / "traces"
AZURE_CODE = TRACES / "azure_code_2023.csv"
MOONCAKE = TRACES / "mooncake_synthetic.jsonl"


def write(path: Path, text: str, *, gz: bool = False, newline: str = "\n") -> Path:
    data = text.replace("\n", newline).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_the_ingest_core_imports_without_django():
    code = (
        "import sys, planner.ingest.pipeline, planner.ingest.characterise, planner.ingest.synth, "
        "planner.ingest.normalised; assert 'django' not in sys.modules, 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])


def test_the_azure_code_trace_ingests_with_crlf_and_seven_digit_fractions(tmp_path):
    result = ingest(AZURE_CODE, tmp_path / "out.parquet", chunk_rows=1000)
    df = read_trace(tmp_path / "out.parquet")
    # Totals counted independently with the csv module: 8,819 rows, 18,059,974 in, 245,896 out.
    assert (result.format, result.requests, len(df)) == ("azure", 8819, 8819)
    assert (result.input_tokens, result.output_tokens) == (18_059_974, 245_896)
    # 19:14:19.9280160 - 18:17:03.9799600 = 3,435.948056 s; 18:17:04.0319600 - 18:17:03.9799600 = 0.052 s
    assert result.span_s == pytest.approx(3435.948056, abs=1e-6)
    assert df["arrival_s"].iloc[0] == 0.0 and df["arrival_s"].iloc[1] == pytest.approx(0.052, abs=1e-9)
    assert df["arrival_s"].is_monotonic_increasing
    assert list(df.iloc[0][["input_tokens", "output_tokens"]]) == [4808, 10]
    assert set(df["region"]) == {"region-1"} and set(df["model"]) == {"default"} and set(df["tier"]) == {"IW-F"}
    assert str(df["input_tokens"].dtype) == "int32" and str(df["region"].dtype) == "category"
    assert result.start_epoch_s == pytest.approx(pd.Timestamp("2023-11-16 18:17:03.97996", tz="UTC").timestamp())


def test_the_mooncake_trace_keeps_its_prefix_block_ids(tmp_path):
    result = ingest(MOONCAKE, tmp_path / "out.parquet", chunk_rows=500)
    df = read_trace(tmp_path / "out.parquet")
    assert (result.format, result.requests) == ("mooncake", 3993)
    assert (result.input_tokens, result.output_tokens) == (61_194_628, 595_432)
    assert result.span_s == pytest.approx(1022.025)  # last timestamp 1,022,025 ms
    assert list(df["hash_ids"].iloc[0]) == list(range(79))  # first line: hash_ids 0..78
    assert df["arrival_s"].iloc[2] == pytest.approx(0.040)


AZURE_VARIANTS = {
    "seven_digits_no_zone": ["2023-11-16 18:17:03.9799600", "2023-11-16 18:17:04.0319600"],
    "no_fraction": ["2024-05-10 00:00:00", "2024-05-10 00:00:01"],
    "zone_and_fraction": ["2024-05-10 00:00:00.009930+00:00", "2024-05-10 00:00:00.509930+00:00"],
    "zone_no_fraction": ["2024-05-10 00:00:00+00:00", "2024-05-10 00:00:02+00:00"],
    "iso_t_z": ["2024-10-15T12:00:00.269Z", "2024-10-15T12:00:01Z"],
    "mixed": [
        "2024-05-10 00:00:00+00:00",
        "2024-05-10T00:00:00.25Z",
        "2024-05-10 00:00:00.7500000",
        "2024-05-10 02:00:01+02:00",
    ],
}
AZURE_EXPECTED = {
    "seven_digits_no_zone": [0.0, 0.052],
    "no_fraction": [0.0, 1.0],
    "zone_and_fraction": [0.0, 0.5],
    "zone_no_fraction": [0.0, 2.0],
    "iso_t_z": [0.0, 0.731],
    "mixed": [0.0, 0.25, 0.75, 1.0],  # 02:00:01+02:00 is 00:00:01 UTC
}


@pytest.mark.parametrize("variant", sorted(AZURE_VARIANTS))
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("gz", [False, True])
def test_azure_timestamps_parse_in_every_variant(tmp_path, variant, newline, gz):
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [
        f"{ts},{100 + i},{10 + i}" for i, ts in enumerate(AZURE_VARIANTS[variant])
    ]
    src = write(tmp_path / ("in.csv.gz" if gz else "in.csv"), "\n".join(lines) + "\n", gz=gz, newline=newline)
    result = ingest(src, tmp_path / "out.parquet")
    df = read_trace(tmp_path / "out.parquet")
    assert result.format == "azure"
    assert df["arrival_s"].tolist() == pytest.approx(AZURE_EXPECTED[variant], abs=1e-9)
    assert df["input_tokens"].tolist() == [100 + i for i in range(len(AZURE_VARIANTS[variant]))]


def test_the_azure_multimodal_layout_with_num_images_is_read(tmp_path):
    text = (
        "TIMESTAMP,NumImages,ContextTokens,GeneratedTokens\n2024-10-15T12:00:00.269Z,2,1000,50\n"
        "2024-10-15T12:00:01.269Z,0,200,5\n"
    )
    src = write(tmp_path / "mm.csv.gz", text, gz=True)
    result = ingest(src, tmp_path / "out.parquet")
    assert (result.format, result.requests, result.input_tokens, result.span_s) == ("azure", 2, 1200, 1.0)


def test_burstgpt_keeps_failed_requests_flagged_and_the_model(tmp_path):
    text = (
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "6,GPT-4,1000,0,1000,API log\n"
        "6,ChatGPT,30,12,42,Conversation log\n"
    )
    result = ingest(write(tmp_path / "b.csv", text), tmp_path / "out.parquet")
    df = read_trace(tmp_path / "out.parquet")
    assert result.format == "burstgpt" and result.failed == 1
    assert df["failed"].tolist() == [False, True, False]
    assert df["model"].astype(str).tolist() == ["ChatGPT", "GPT-4", "ChatGPT"]
    assert df["arrival_s"].tolist() == [0.0, 1.0, 1.0]


def test_burstgpt_log_type_can_be_mapped_to_tiers(tmp_path):
    text = (
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "0,ChatGPT,10,1,11,Conversation log\n1,ChatGPT,10,1,11,API log\n"
    )
    options = {"tier": {"column": "Log Type", "map": {"Conversation log": "IW-F", "API log": "NIW"}}}
    ingest(write(tmp_path / "b.csv", text), tmp_path / "out.parquet", options=options)
    assert read_trace(tmp_path / "out.parquet")["tier"].astype(str).tolist() == ["IW-F", "NIW"]


def test_native_csv_reads_every_optional_column(tmp_path):
    text = (
        "arrival_s,input_tokens,output_tokens,region,model,tier,slo_s,session_id\n"
        "10.5,100,20,east,llama,IW-F,,s1\n"
        "11,200,30,west,llama,niw,86400,s2\n"
        "12.25,300,40,,,,,\n"
    )
    result = ingest(write(tmp_path / "n.csv", text), tmp_path / "out.parquet")
    df = read_trace(tmp_path / "out.parquet")
    assert result.format == "native"
    assert df["arrival_s"].tolist() == [0.0, 0.5, 1.75]
    assert df["region"].astype(str).tolist() == ["east", "west", "region-1"]
    assert df["tier"].astype(str).tolist() == ["IW-F", "NIW", "IW-F"]
    assert np.isnan(df["deadline_s"].iloc[0]) and df["deadline_s"].iloc[1] == pytest.approx(0.5 + 86400)
    assert df["session_id"].tolist() == ["s1", "s2", ""]


def test_native_csv_accepts_timestamps_and_absolute_deadlines(tmp_path):
    text = (
        "timestamp,input_tokens,output_tokens,deadline\n"
        "2024-05-10T00:00:00Z,1,2,2024-05-10T01:00:00Z\n"
        "2024-05-10T00:00:30Z,3,4,\n"
    )
    ingest(write(tmp_path / "n.csv", text), tmp_path / "out.parquet")
    df = read_trace(tmp_path / "out.parquet")
    assert df["arrival_s"].tolist() == [0.0, 30.0]
    assert df["deadline_s"].iloc[0] == 3600.0 and np.isnan(df["deadline_s"].iloc[1])


def test_native_json_lines_are_read(tmp_path):
    lines = [
        {"arrival_s": 2.0, "input_tokens": 5, "output_tokens": 6, "tier": "IW-N", "hash_ids": [1, 2]},
        {"arrival_s": 3.5, "input_tokens": 7, "output_tokens": 8, "tier": "NIW", "hash_ids": [1]},
    ]
    src = write(tmp_path / "n.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    result = ingest(src, tmp_path / "out.parquet")
    df = read_trace(tmp_path / "out.parquet")
    assert result.format == "native"
    assert df["arrival_s"].tolist() == [0.0, 1.5] and df["tier"].astype(str).tolist() == ["IW-N", "NIW"]
    assert [list(x) for x in df["hash_ids"]] == [[1, 2], [1]]


def test_blank_lines_are_skipped(tmp_path):
    text = "arrival_s,input_tokens,output_tokens\n0,1,1\n\n2,3,3\n"
    result = ingest(write(tmp_path / "n.csv", text), tmp_path / "out.parquet")
    assert result.requests == 2 and result.span_s == 2.0


@pytest.mark.parametrize("in_memory", [True, False])
def test_unsorted_timestamps_are_sorted_not_rejected(tmp_path, in_memory):
    rng = np.random.default_rng(5)
    t = rng.uniform(0, 1000, size=5000)
    frame = pd.DataFrame({"arrival_s": t, "input_tokens": np.arange(5000), "output_tokens": 1})
    src = tmp_path / "u.csv"
    frame.to_csv(src, index=False)
    kwargs = {} if in_memory else {"sort_in_memory_rows": 100, "bucket_rows": 700}
    result = ingest(src, tmp_path / "out.parquet", chunk_rows=600, **kwargs)
    df = read_trace(tmp_path / "out.parquet")
    assert not result.was_sorted and df["arrival_s"].is_monotonic_increasing
    order = np.argsort(t, kind="stable")
    assert df["input_tokens"].tolist() == order.tolist()
    assert df["arrival_s"].to_numpy() == pytest.approx(np.sort(t) - t.min())


def test_unsorted_rows_keep_their_own_optional_columns_through_the_bucket_sort(tmp_path):
    rng = np.random.default_rng(2)
    t = rng.permutation(300).astype(float)
    lines = [
        json.dumps(
            {
                "arrival_s": float(x),
                "input_tokens": int(x),
                "output_tokens": 1,
                "slo_s": 10,
                "session_id": f"s{int(x)}",
                "hash_ids": [int(x), int(x) + 1],
            }
        )
        for x in t
    ]
    src = tmp_path / "u.jsonl"
    src.write_text("\n".join(lines) + "\n")
    result = ingest(src, tmp_path / "out.parquet", chunk_rows=40, sort_in_memory_rows=50, bucket_rows=60)
    df = read_trace(tmp_path / "out.parquet")
    assert not result.was_sorted and df["arrival_s"].tolist() == list(range(300))
    assert df["input_tokens"].tolist() == list(range(300))
    assert df["session_id"].tolist() == [f"s{i}" for i in range(300)]
    assert [list(h) for h in df["hash_ids"]] == [[i, i + 1] for i in range(300)]
    assert (df["deadline_s"] - df["arrival_s"]).tolist() == [10.0] * 300


def test_a_normalised_parquet_trace_imports_as_native(tmp_path):
    from planner.ingest.normalised import write_frame

    frame = pd.DataFrame(
        {
            "arrival_s": [0.0, 1.5, 3.0],
            "input_tokens": [10, 20, 30],
            "output_tokens": [1, 2, 3],
            "region": ["a", "b", "a"],
            "model": "m",
            "tier": ["IW-F", "NIW", "IW-N"],
            "deadline_s": [np.nan, 86401.5, np.nan],
        }
    )
    write_frame(frame, tmp_path / "in.parquet")
    result = ingest(tmp_path / "in.parquet", tmp_path / "out.parquet", options={"time_scale": 2})
    df = read_trace(tmp_path / "out.parquet")
    assert result.format == "native" and df["arrival_s"].tolist() == [0.0, 3.0, 6.0]
    assert df["tier"].astype(str).tolist() == ["IW-F", "NIW", "IW-N"]
    assert np.isnan(df["deadline_s"].iloc[0]) and df["deadline_s"].iloc[1] == 2 * 86401.5


def test_a_late_out_of_order_row_falls_back_to_the_sorting_path(tmp_path):
    rows = [(float(i), i) for i in range(1000)]
    rows[900] = (5.5, 900)  # sorted for 900 rows, then one early arrival
    src = tmp_path / "late.csv"
    src.write_text("arrival_s,input_tokens,output_tokens\n" + "".join(f"{t},{n},1\n" for t, n in rows))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = ingest(src, out_dir / "t.parquet", chunk_rows=100, options={"rate": 2, "seed": 1})
    df = read_trace(out_dir / "t.parquet")
    assert not result.was_sorted and result.requests == 2000 and df["arrival_s"].is_monotonic_increasing
    assert sorted(os.listdir(out_dir)) == ["t.parquet"]  # the abandoned one-pass output is gone
