"""The Chiron reproduction's saved results put back into its per-point cache aggregate to the same W_B results.

``reproduce_chiron.py --load docs/results/chiron.json --seed-cache`` lets a later run add only the missing W_B
points; that is sound only if the seeded cache, read back by ``--wb-from-cache``, gives the saved sections again.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_seeded_cache_reads_back_as_the_saved_w_b_results(tmp_path, monkeypatch):
    from tests.benchmarks import reproduce_chiron as R

    saved = json.loads((ROOT / "docs" / "results" / "chiron.json").read_text())
    monkeypatch.setattr(R, "CACHE", tmp_path)
    monkeypatch.setitem(R.CACHED_ONLY, "on", True)  # nothing may run: every point must come from the seeded cache
    assert R.seed_cache(saved) > 0
    assert R.seed_cache(saved) == 0  # a cached file is kept, never overwritten
    qs = [10_000, 30_000, 100_000, 300_000, 700_000, 1_000_000]
    got = R.wb_cached(saved["args"]["wb_scale"], qs)
    want = {k: saved["results"][k] for k in ("wb_chiron", "wb", "wb_live") if k in saved["results"]}
    assert json.loads(json.dumps(got, default=float)) == want
