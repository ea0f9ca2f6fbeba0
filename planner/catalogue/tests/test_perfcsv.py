from pathlib import Path

import numpy as np
import pytest

from planner.catalogue.errors import ProfileError
from planner.catalogue.perfcsv import load_perf_table

PROFILES = Path(__file__).resolve().parents[3] / "fixtures" / "hardware" / "sageserve"
HEADER = "model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,prompt_time,token_time,e2e_time,tensor_parallel\n"


def test_perf_model_csv_is_read_as_milliseconds_with_per_iteration_token_time():
    table = load_perf_table(PROFILES / "perf_model.csv")
    units = table.units[("llama2-70b", "a100-80gb", 8)]
    assert (units.time_unit, units.token_time) == ("ms", "per_token")
    # first llama2-70b TP8 A100 row of the file: prompt 512, batch 1: 94 ms prefill (spec section 5)
    rows = table.rows[(table.rows.model == "llama2-70b") & (table.rows.hardware == "a100-80gb") & (table.rows.tp == 8)]
    first = rows[(rows.prompt_size == 512) & (rows.batch_size == 1) & (rows.token_size == 128)]
    assert first["prompt_time_s"].median() == pytest.approx(0.0943, abs=0.002)
    assert first["token_time_s"].median() == pytest.approx(0.0449, abs=0.001)


def test_llama3_files_are_read_as_seconds_with_total_token_time():
    table = load_perf_table(PROFILES / "Llama-3.1-8B-tp-2.csv")
    units = table.units[("Llama-3.1-8B", "a100-80gb", 2)]
    assert (units.time_unit, units.token_time) == ("s", "total")
    r = table.rows.iloc[0]
    # line 2 of the file: prompt_time 0.02635645866394043 s, token_time 1.0914227962493896 s for 128 tokens
    assert r["prompt_time_s"] == pytest.approx(0.02635645866394043)
    assert r["token_time_s"] == pytest.approx(1.0914227962493896 / 128)


def test_mixed_units_in_one_file_are_detected_per_group():
    table = load_perf_table(PROFILES / "perf_model_4_models.csv")
    assert table.units[("A", "a100-80gb", 8)].time_unit == "ms"
    assert table.units[("C", "a100-80gb", 4)].time_unit == "s"
    assert table.units[("C", "a100-80gb", 4)].token_time == "total"


def test_the_same_measurement_in_ms_per_iteration_and_in_seconds_total_normalises_identically():
    # a 100-token decode at 20 ms per iteration after a 50 ms prefill: e2e 2.05 s
    ms = HEADER + "m,g,512,1,100,0,0,50,20,2050,2\nm,g,512,2,100,0,0,90,21,2190,2\n"
    s = HEADER + "m,g,512,1,100,0,0,0.05,2.0,2.05,2\nm,g,512,2,100,0,0,0.09,2.1,2.19,2\n"
    a, b = load_perf_table(ms).rows, load_perf_table(s).rows
    assert np.allclose(a["prompt_time_s"], [0.05, 0.09])
    assert np.allclose(a["token_time_s"], [0.020, 0.021])
    assert np.allclose(a[["prompt_time_s", "token_time_s", "e2e_s"]], b[["prompt_time_s", "token_time_s", "e2e_s"]])


def test_units_can_be_forced_when_detection_would_guess_wrong():
    text = HEADER + "m,g,512,1,100,0,0,1.5,0.3,31.5,2\n"
    t = load_perf_table(text, time_unit="s", token_time="per_token")
    assert t.rows["prompt_time_s"].iat[0] == pytest.approx(1.5)
    assert t.rows["token_time_s"].iat[0] == pytest.approx(0.3)
    t = load_perf_table(text, time_unit="ms", token_time="total")
    assert t.rows["token_time_s"].iat[0] == pytest.approx(0.3e-3 / 100)


def test_without_e2e_the_token_time_mode_comes_from_its_growth_with_token_size():
    header = "model,hardware,prompt_size,batch_size,token_size,prompt_time,token_time,tensor_parallel\n"
    total = header + "m,g,512,1,128,0.05,1.0,2\nm,g,512,1,256,0.05,2.0,2\nm,g,512,1,512,0.05,4.1,2\n"
    per = header + "m,g,512,1,128,50,20,2\nm,g,512,1,256,50,20.5,2\nm,g,512,1,512,50,20.2,2\n"
    assert load_perf_table(total).units[("m", "g", 2)].token_time == "total"
    assert load_perf_table(per).units[("m", "g", 2)].token_time == "per_token"


@pytest.mark.parametrize(
    "text, where, words",
    [
        ("", "line 1", "empty"),
        ("model,hardware,prompt_size\nm,g,1\n", "line 1 (header)", "missing column"),
        (HEADER, "line 2", "no data rows"),
        (
            HEADER + "m,g,512,1,128,0,0,94,45,5800,8\nm,g,512,1,128,0,0,abc,45,5800,8\n",
            "line 3, column prompt_time",
            "not a number",
        ),
        (HEADER + "m,g,512,1,128,0,0,94,-45,5800,8\n", "line 2, column token_time", "must be > 0"),
        (HEADER + "m,g,512,1.5,128,0,0,94,45,5800,8\n", "line 2, column batch_size", "whole number"),
        (HEADER + ",g,512,1,128,0,0,94,45,5800,8\n", "line 2, column model", "empty model"),
    ],
)
def test_bad_tables_are_rejected_naming_the_line_and_column(text, where, words):
    with pytest.raises(ProfileError) as err:
        load_perf_table(text)
    assert err.value.where == where
    assert words in err.value.message


def test_binary_garbage_is_rejected_as_not_a_csv():
    with pytest.raises(ProfileError, match="binary"):
        load_perf_table(b"\x89PNG\r\n\x1a\n\x00\x00\x00")


def test_a_gzipped_table_is_read_and_a_truncated_one_is_refused():
    import gzip

    raw = (PROFILES / "Llama-3.2-3B-tp-2.csv").read_bytes()
    packed = gzip.compress(raw)
    assert len(load_perf_table(packed).rows) == 100
    with pytest.raises(ProfileError, match="truncated"):
        load_perf_table(packed[: len(packed) // 2])
