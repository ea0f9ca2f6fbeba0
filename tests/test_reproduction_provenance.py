"""Every figure of a reproduction document comes from its results file.

Each generated page is rendered from its results file and from the same results with every number moved
(tests/benchmarks/support/provenance.py); a figure that stays put was typed into the writer. The only typed
figures allowed are the paper's and the setting's, listed below per page with where they come from. A measured
figure typed into a writer's prose fails here: make the writer compute it from the results.
The committed page must also be what its writer renders from the committed results (nothing edited by hand).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from tests.benchmarks.support.provenance import numbers, perturb, typed_numbers, unexplained

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"

# The typed figures each page may carry: the paper's (quoted beside ours) and the setting's (inputs, targets,
# grids and engine defaults, not measurements).
ALLOWED = {
    "opscale": {
        # the paper's Figs. 10-12 and the targets
        "20", "25", "30", "35", "40", "41", "45", "50", "100", "15", "22",
        # setting: Fig. 10's load (40 QPS), 60 s windows, A100 power 60 / 400 W and 80 GB, trace years, the input
        # lengths of the gap sweep (results keys), the 10 % greedy-gap target
        "60", "400", "80", "2023", "2024", "4096", "15296", "10",
        # the expensive move's cost (replicas x TP), parsed from the results' move text
        "12",
    },
    "preserve": {
        # the paper: 93 % / 3.8x Llumnix point, 41.3 % cut, P99s 0.45 / 0.767 / 0.956 / 1.23 s, knee 9.3-9.5 and
        # 10.5 QPS, RQ2 49.4 % / 45.1 % / 0.197-0.25 / 0.455 / 4.20 s, isolated 0.067 s/token, TTFT 2.2 s, targets
        "93", "41.3", "0.45", "0.767", "0.956", "1.23", "9.3", "10.5", "49.4", "45.1", "0.197", "0.25", "0.455",
        "4.20", "0.067", "2.2", "30", "20", "35",
        # setting: the derived A40 (x1.99 / x2.47, Vidur ratios 1.88-2.12, 128-4,096 tokens, 48 GB, 12.6 GB,
        # 512 KiB, 58,365 / 44,632 tokens, '40 GB'), vLLM defaults and benchmark filters (256, 2048, 4,096,
        # 1,024, 2,048), Llumnix defaults (10 / 60, 25 GB/s), the KV thresholds of the reactive row (80 / 30 %),
        # the knee factors and threshold multipliers (0.95, 1.0, 1.1, 1.2, 1.5), 95 % intervals, year
        "1.99", "2.47", "1.88", "2.12", "128", "4,096", "48", "12.6", "512", "58,365", "44,632", "40", "256",
        "2048", "1,024", "2,048", "10", "60", "25", "80", "0.95", "1.0", "1.1", "1.2", "1.5", "95", "2024",
    },
    "chiron": {
        # the paper: ~15 instances, 60 % saving, 20 req/s per instance, R^2 0.99, the targets (45 %, 99 %, 0.95)
        "15", "60", "20", "0.99", "45", "99", "100", "0.95",
        # setting: Fig. 19's size (30 req/s, 1,000,000 requests, cap 50, 30 s load, 80 min, the 65-min deadline
        # + 10 % = 71.5), SLOs (10 s, 200 ms), KV copy 25 GB/s, batch caps (2,048-4,096), the table's batches
        # (48, 64, 256, 1,024), the estimator's set-up (400 + 6,000 requests, 2,000 and 4,000 queued), 40-80 min
        "30", "1,000,000", "50", "80", "65", "71.5", "10", "200", "25", "2,048", "4,096", "48", "64", "256", "1,024",
        "400", "6,000", "2,000", "4,000", "40",
        # the W_B sweep's grid as its results keys spell it (scale-up 10 / 50, scale-down 60 / 200, max batch)
        "10.0", "50.0", "60.0", "200.0", "1024", "700,000",
    },
    "slinfer": {
        # the paper: Table III (2.0 / 3.6 / 4.0, 0.9 / 2.5 / 4.0 GPUs; 99 / 93 / 65, 99 / 99 / 86 %), IX-B's gains
        # (1.86-2.54, 1.47-1.62, 1.18-1.70), its Fig. 22 text (3.0 CPUs, 3.2 / 1.5 GPUs), Fig. 31 (11.3 %, 1.4 %),
        # Fig. 23 (89 %), the resize measurements (32 -> 16 GB in 0.3 s, 32 -> 64 GB in 1.9 s)
        "2.0", "3.6", "4.0", "2.5", "99", "93", "65", "86", "1.86", "2.54", "1.47", "1.62", "1.18", "1.70", "3.0",
        "3.2", "1.5", "11.3", "1.4", "89", "16", "1.9",
        # setting: the targets (1.7-2.7, 1.1-1.8), the artefact's 0.95 SLO factor, the trace (128 functions x 30 min,
        # 2023 lengths, groups of 32 / 64 / 128), the watermarks run (25 / 50 %), the notes' item numbers
        "1.7", "2.7", "1.1", "1.8", "0.95", "128", "30", "2023", "32", "64", "25", "50", "10", "11", "12", "13",
    },
}


def _opscale():
    from tests.benchmarks.reproduce_opscale import render

    res = json.loads((RESULTS / "opscale.json").read_text())
    return res, (lambda r: render(r, "python tests/benchmarks/reproduce_opscale.py --load", None)), frozenset()


def _preserve():
    from tests.benchmarks.support.preserve_doc import write_doc

    res = json.loads((RESULTS / "preserve.json").read_text())
    cmd = "python tests/benchmarks/reproduce_preserve.py --load docs/results/preserve.json --write-doc"
    return res, (lambda r: write_doc(r, cmd)), frozenset({"factor", "seed", "seeds", "x_knee", "k_grid"})


def _chiron(tmp: Path):
    from tests.benchmarks.support.chiron_doc import write_doc

    saved = json.loads((RESULTS / "chiron.json").read_text())
    args = argparse.Namespace(**saved["args"])

    def render(r):
        path = tmp / "chiron.md"
        write_doc(r, path, args)
        return path.read_text()

    return saved["results"], render, frozenset()


def _slinfer():
    from tests.benchmarks.support.slinfer_doc import write_doc

    res = json.loads((RESULTS / "slinfer.json").read_text())
    cmd = ".venv/bin/python tests/benchmarks/reproduce_slinfer.py --load docs/results/slinfer.json"
    return res, (lambda r: write_doc(r, cmd)), frozenset()


def _writer(name: str, tmp: Path):
    return {"opscale": _opscale, "preserve": _preserve, "slinfer": _slinfer}[name]() if name != "chiron" else _chiron(tmp)


STAMP = re.compile(r"^Generated by .*$", re.M)  # the command line and the time it ran


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_no_measured_figure_is_typed_into_the_writer(name, tmp_path):
    res, render, keep = _writer(name, tmp_path)
    bad = unexplained(typed_numbers(render, res, keep), ALLOWED[name])
    assert not bad, f"docs/reproduction_{name}.md: figures typed into its writer (not from the results): " + "; ".join(
        f"{t} in {line.strip()[:120]!r}" for t, line in bad[:20])


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_the_committed_page_is_what_its_writer_renders_from_the_results(name, tmp_path):
    res, render, _ = _writer(name, tmp_path)
    committed = (ROOT / "docs" / f"reproduction_{name}.md").read_text()
    assert STAMP.sub("<time>", render(res)).rstrip() == STAMP.sub("<time>", committed).rstrip(), (
        f"docs/reproduction_{name}.md differs from what its writer renders from docs/results: regenerate it")


def test_the_check_finds_a_typed_figure():
    """The check itself: a writer that types a measured figure is caught, one that formats the result is not."""
    res = {"saving": 0.2264, "runs": 3}

    def honest(r):
        return f"LT-UA saves {100 * r['saving']:.1f} % over {r['runs']} seeds (paper: 23.4 %)."

    def typed(r):
        return honest(r) + " Against the tuned Reactive it saves 15.1 %."

    assert unexplained(typed_numbers(honest, res), {"23.4"}) == []
    assert [t for t, _ in unexplained(typed_numbers(typed, res), {"23.4"})] == ["15.1"]
    assert perturb(res)["saving"] != res["saving"] and [t for _, t in numbers("see Fig. 11 and table 3: 45 %")] == ["45"]


# ---------------------------------------------------------------------------------------------------- SageServe
SAGESERVE_DOC = ROOT / "docs" / "reproduction.md"
GENERATED = re.compile(r"<!-- generated:([\w-]+) -->\n(.*?)\n<!-- /generated:\1 -->", re.S)
# The page's own prose (before its earlier single-seed sections) may type only these: the paper's 20-25 %, the
# presets' settings (thresholds 70/30, 50/25, 60/50 %, 15 s cooldown, 10 h escalation, last 20 min, 65 / 155 s
# locks, 2.5 / 10 min waste, 90 %), the seeds, and the compute note's wall times and load.
SAGESERVE_OWN = {"20", "25", "70", "30", "60", "50", "10", "15", "65", "155", "2.5", "90", "2025", "2026", "2027",
                 "250", "500"}
# The earlier single-seed sections (from "## Setup" on): every measured figure there is generated (blocks checked
# below); what their own prose still types is the paper's and the setting's, frozen here so that a new typed figure
# fails: the paper's Fig. 15 violations and Q3 TTFTs (45 / 25, 31 / 34, 24 / 60, 28 / 38 %; 5.6 / 5.6, 2.4 / 6.1,
# 12.1, 2.1 / 7.9 s), sec. 7.2.7 (26.3 %, 22 %), its 70 % waste cut and Nov 2024 trace; the setting: beta 10 %, the
# 10 h release, 60 % release threshold, 60 s IW-N SLO, 70 % scale-out threshold, last 20 minutes, 15 s cooldown,
# 24 h, NIW 28 % of requests (the workload's share).
SAGESERVE_SINGLE_SEED_TYPED = {
    "10", "12.1", "15", "2.1", "2.4", "20", "2024", "22", "24", "25", "26.3", "28", "31", "34", "38", "45", "5.6",
    "6.1", "60", "7.9", "70",
}
PAPER_SINGLE_SEED = {"28.2", "24", "100", "34.5", "12", "362.25", "274.5", "291", "277.5", "24.2", "19.7", "23.4",
                     "302", "227", "248", "233", "24.8", "17.9", "22.8", "25", "70", "80", "98.32", "85", "10",
                     "2024", "2025", "702,005",  # the paper's traces' years; its $ example's product
                     "26.3", "22", "60", "31", "34",  # sec. 7.2.7 and Fig. 15
                     "30",  # the Reactive scale-in threshold (setting)
                     "28", "72",  # the Llama-2 day's IW share (the workload)
                     "98"}  # computed (1 - 1.7 / 83.5): a ratio this close to 100 % does not move under the check
SINGLE_SEED_FROM = "## Setup (scaled-down day, said plainly)"


def _typed_prose(text: str) -> list[tuple[str, str]]:
    text = re.sub(r"```.*?```", " ", GENERATED.sub(" ", text), flags=re.S)
    lines = text.splitlines()
    return unexplained([(t, lines[i]) for i, t in numbers(text)], set())


def test_sageserve_page_types_no_measured_figure_in_its_own_prose():
    text = SAGESERVE_DOC.read_text()
    own, single = text.split(SINGLE_SEED_FROM, 1)
    bad = [(t, line) for t, line in _typed_prose(own) if t.lstrip("-") not in SAGESERVE_OWN]
    assert not bad, "docs/reproduction.md: measured figures typed outside the generated blocks: " + "; ".join(
        f"{t} in {line.strip()[:100]!r}" for t, line in bad[:20])
    new = [(t, line) for t, line in _typed_prose(single) if t not in SAGESERVE_SINGLE_SEED_TYPED]
    assert not new, "docs/reproduction.md: new typed figures in the single-seed sections: " + "; ".join(
        f"{t} in {line.strip()[:100]!r}" for t, line in new[:20])


def test_sageserve_prose_blocks_come_from_the_results():
    from tests.benchmarks.reproduce_fair import accounting, markdown, paper_beside_ours
    from tests.benchmarks.support.sageserve_doc import (
        a100_reading,
        llama2_churn,
        llama2_day,
        llama2_theta,
        main_day_models,
        main_day_side_by_side,
        presets_in_short,
        ratio_table,
        saving_sources,
        scheduler_table,
        why_reactive,
    )

    path = RESULTS / "sageserve_fair.json"
    res = json.loads(path.read_text())
    blocks = dict(GENERATED.findall(SAGESERVE_DOC.read_text()))
    for name, fn in (("presets-in-short", presets_in_short), ("saving-sources", saving_sources),
                     ("accounting", accounting), ("paper-beside-ours", paper_beside_ours), ("fair-tables", markdown)):
        assert blocks[name].strip() == fn(path).strip(), f"docs/reproduction.md block {name}: regenerate it"
    for fn in (presets_in_short, saving_sources):
        bad = unexplained(typed_numbers(fn, res, frozenset({"seeds"})), {"15", "20", "2025", "1,728", "1728", "24"})
        assert not bad, f"{fn.__name__}: figures typed into the writer: " + "; ".join(t for t, _ in bad)
    single = json.loads((RESULTS / "sageserve.json").read_text())
    for name, fn in (("main-day-models", main_day_models), ("a100-reading", a100_reading),
                     ("llama2-churn", llama2_churn), ("main-day-side-by-side", main_day_side_by_side),
                                                        ("ratio-table", ratio_table),
                                                        ("scheduler-table", scheduler_table),
                                                        ("why-reactive", why_reactive),
                                                        ("llama2-day", llama2_day)):
        assert blocks[name].strip() == fn(single).strip(), f"docs/reproduction.md block {name}: regenerate it"
        # the paper's figures (A100 -28.2 %; Figs. 8, 11, 13; Table 1; the $ example), 24 h, beta 100 %, fleet size;
        # the Llama-2 day's theta comes from its scenario fixture, moved here with the results
        given = {"single": single, "theta": llama2_theta()}

        def render(r, fn=fn):
            return fn(r["single"], r["theta"]) if fn is llama2_day else fn(r["single"])

        bad = unexplained(typed_numbers(render, given, frozenset({"paper_own_example"})), PAPER_SINGLE_SEED)
        assert not bad, f"{fn.__name__}: figures typed into the writer: " + "; ".join(t for t, _ in bad)
    from tests.benchmarks.support.sageserve_setup_doc import a100_theta, setup_facts, setup_table, why_scale_theta

    facts = setup_facts(single)  # the results and the theta each scenario fixture measured
    for name, fn in (("setup-table", setup_table), ("a100-theta", a100_theta), ("why-scale-theta", why_scale_theta)):
        assert blocks[name].strip() == fn(facts).strip(), f"docs/reproduction.md block {name}: regenerate it"
        # the paper's and the setting's: ~10M requests, 20 instances, min 2 / max 3, max 20, 60 % / 50 %, 10 h,
        # 24 h, 60 s, $98.32, the traces' years, Fig. 11's ~15 instances (362 instance-hours / 24 h), 70 % waste
        # cut, the Llama-2 day's 12 req/s
        bad = unexplained(typed_numbers(fn, facts), {"10", "20", "50", "60", "24", "98.32", "2024", "2025", "15",
                                                      "362", "70", "12"})
        assert not bad, f"{fn.__name__}: figures typed into the writer: " + "; ".join(t for t, _ in bad)


def test_sageserve_fig11_and_single_seed_tables_come_from_their_results():
    """The Fig. 11 like-for-like blocks (reproduce_sageserve_fig11.py) and the single-seed tables
    (reproduce_sageserve.py --markdown): what their writers render from the committed results, typing no measured
    figure (the paper's Fig. 11: Reactive 362.25 vs LT-UA 277.5 instance-hours, -23.4 %, its Jul 2025 trace)."""
    from tests.benchmarks import reproduce_sageserve_fig11 as f11
    from tests.benchmarks.reproduce_sageserve import markdown as single_tables

    blocks = dict(GENERATED.findall(SAGESERVE_DOC.read_text()))
    res = json.loads((RESULTS / "sageserve_fig11.json").read_text())
    for name, fn in (("fig11-like-for-like", f11.markdown), ("fig11-in-short", f11.in_short)):
        assert blocks[name].strip() == fn(res).strip(), f"docs/reproduction.md block {name}: regenerate it"
        bad = unexplained(typed_numbers(fn, res, frozenset({"seed", "seeds"})), {"23.4", "2025", "277.5", "362.25"})
        assert not bad, f"{name}: figures typed into the writer: " + "; ".join(t for t, _ in bad)
    assert blocks["sageserve-tables"].strip() == single_tables(RESULTS / "sageserve.json").strip(), (
        "docs/reproduction.md block sageserve-tables: regenerate it (reproduce_fair.py --write-doc)")
