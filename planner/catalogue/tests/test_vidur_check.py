"""The fitted prefill against an independent source: Vidur's per-operator GPU timings (lower bound)."""

from pathlib import Path

import pandas as pd
import pytest

from planner.catalogue.builtin import engine_spec
from planner.catalogue.fit import prefill_time

EXTRACT = Path(__file__).resolve().parents[3] / "fixtures" / "hardware" / "vidur" / "llama2-70b_linear_ops.csv"
OPS = pd.read_csv(EXTRACT)


def _vidur(gpu: str, tp: int, tokens: int) -> float:
    row = OPS[(OPS.gpu == gpu) & (OPS.tp == tp) & (OPS.num_tokens == tokens)]
    assert len(row) == 1
    return float(row.linear_ops_s.iloc[0])


@pytest.mark.parametrize("gpu", ["a100-80gb", "h100-80gb"])
@pytest.mark.parametrize("tp", [2, 4, 8])
@pytest.mark.parametrize("tokens", [512, 1024, 2048, 4096])
def test_fitted_prefill_is_never_faster_than_vidurs_linear_operators_alone(gpu, tp, tokens):
    # Vidur's sum leaves out attention and all-reduces, so a sound prefill model must not undercut it.
    fitted = float(prefill_time(engine_spec(f"llama2-70b/{gpu}/tp{tp}")["prefill"], tokens))
    assert fitted >= 0.95 * _vidur(gpu, tp, tokens)


@pytest.mark.parametrize("tokens", [512, 1024, 2048, 4096])
def test_at_tp2_on_a100_the_linear_operators_are_most_of_the_fitted_prefill(tokens):
    # Little communication at TP2 and compute-bound GEMMs on the slower GPU: the fit should sit within
    # 0-35 % above Vidur (measured 4-18 %).
    fitted = float(prefill_time(engine_spec("llama2-70b/a100-80gb/tp2")["prefill"], tokens))
    assert 1.0 <= fitted / _vidur("a100-80gb", 2, tokens) <= 1.35
