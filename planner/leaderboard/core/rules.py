"""The leaderboard's rules: traces, windows, load, fleet, SLOs, seeds, strategies and their tuning grids.

Fixed before any run and never changed after seeing results (a change is a new edition of the board, with its
reason in the commit). Django-free; plain data plus two helpers that derive numbers from the traces themselves
(never from simulated results).

Every trace is served by one endpoint of ``DEPLOYMENT`` (catalogue: measured Llama-3.1-8B fit on one A100 80GB,
128k context, so every prompt of every trace fits). Load: each trace's time is scaled so that its mean input
rate is ``LOAD_X`` x the deployment's theta (input tokens per second one instance sustains), i.e. about that many
instances busy on average; the synthetic day at ``DAY_LOAD_X`` (CPU budget: ~0.24M requests per run). A recorded
trace keeps its own time axis: its rate is multiplied in the redraw below.

Seeds: a bundled trace is one recorded window, so seed ``s`` redraws it (``workloads.redraw``): per minute of the
trace, Poisson(m x n) requests (n = the minute's count, m the load multiplier) with (input, output) pairs drawn with replacement from that
minute and arrival times uniform within it: the same minute-by-minute load and length mix, another draw. The
synthetic day draws a new day from its generator with seed ``s``.

SLO (every request is IW-F): TTFT <= min(max(0.5 s, L / 512 s), 8 s) for a prompt of L tokens and mean time per
output token <= 0.25 s, the SLINFER artefact's rule (SLINFER_core/scheduler/config*.py). Attainment = the share
of requests that completed and met both.

Matched SLO, both ways (``board.py``), on mean attainment over the seeds, with a tolerance of ``TOLERANCE``:
- the baseline tuned to the strategy: the cheapest static count of ``STATIC_GRID`` whose attainment is at
  least the strategy's (at its project's defaults) -> the strategy's saving against it, seed by seed;
- the strategy tuned to the baseline: the cheapest point of the strategy's grid whose attainment is at least
  the static baseline's at its default count (provisioned for the trace's peak 5-minute input rate) -> its
  saving against that baseline, seed by seed. The board is ranked by this point's GPU-hours.
"""

from __future__ import annotations

DEPLOYMENT = "llama3.1-8b/a100-80gb/tp1"
MODEL = "llama3.1-8b"
REGION = "us-west"
LOAD_X = 4.0
DAY_LOAD_X = 1.0
MIN_INSTANCES = 1
MAX_INSTANCES = 16
SPOT_POOL = 16  # a warm pool: scale-outs reclaim a pooled instance (the deployment's spot_reclaim_s) while it lasts
PEAK_WINDOW_S = 300
SEEDS = (1, 2, 3, 4, 5)
TOLERANCE = 0.005
SLO = {"ttft_prompt": {"IW-F": {"min_s": 0.5, "per_token_s": 1 / 512, "max_s": 8.0}},
       "itl_s": {"IW-F": 0.25}, "itl_stat": "mean", "ttft_s": {"IW-F": 3600.0}}
SLO_TEXT = ("TTFT <= min(max(0.5 s, prompt tokens / 512 s), 8 s) and mean time per output token <= 0.25 s "
            "(SLINFER artefact's rule); attainment = share of requests completed within both")
ENGINE = {"mode": "fast", "timeline_step_s": 60}

# name -> where it comes from and how it is read (workloads.py); every window is the whole trace
TRACES = {
    "azure-code": {"source": "fixture", "fixture": "azure_code_2023",
                   "title": "Azure LLM inference 2023, code (1 h, 8,819 requests)"},
    "mooncake": {"source": "fixture", "fixture": "mooncake_synthetic",
                 "title": "Mooncake FAST'25 synthetic trace (3,993 requests, long prompts)"},
    "burstgpt": {"source": "slinfer", "trace": "1_10_32_1_0BurstGPT1",
                 "title": "BurstGPT lengths at 1 RPS over 32 Azure Functions arrival streams (SLINFER artefact, "
                          "10 min, merged onto one endpoint)"},
    "slinfer-functions": {"source": "slinfer", "trace": "1_30_128_8_0",
                          "title": "SLINFER's 128 Azure Functions 2019 arrival streams with Azure 2023 "
                                   "conversation lengths (30 min, merged onto one endpoint)"},
    "synthetic-day": {"source": "synthetic", "title": "A synthetic diurnal day (log-normal lengths, mean 2,048 "
                                                      "in / 256 out, trough-to-peak amplitude 0.6)",
                      "synthetic": {"duration_s": 86400, "diurnal_amplitude": 0.6, "peak_hour": 14,
                                    "input_tokens": {"mean": 2048, "sigma": 1.0, "max": 16384},
                                    "output_tokens": {"mean": 256, "sigma": 1.0, "max": 2048}}},
}

# the baseline: static fleets of 1..10 instances (2.5x the mean load of LOAD_X)
STATIC_GRID = tuple(range(1, 11))

# strategy -> family, bundle, the knob tuned, its grid and which grid point is the project's default (the bundle's
# value); a strategy with no knob (None) runs at its defaults only and is matched one way; "only" / "except" name the
# traces it runs on / skips
STRATEGIES = {
    "reactive-unified": {"family": "SageServe", "bundle": "sageserve-text.reactive-unified",
                         "knob": ("scale_out_above", "scale_in_below"),
                         "grid": [(0.2, 0.1), (0.4, 0.2), (0.7, 0.3), (0.85, 0.4)], "default": 2},
    "lt-ua": {"family": "SageServe", "bundle": "sageserve-text.lt-ua", "knob": None, "grid": [],
              "only": ("synthetic-day",)},
    "preserve": {"family": "PreServe", "bundle": "preserve.scaler-oracle", "knob": None, "grid": [],
                 "except": ("synthetic-day",)},
    "chiron": {"family": "Chiron", "bundle": "chiron.default", "knob": None, "grid": []},
    "hpa-running": {"family": "industry", "bundle": "industry.hpa-running", "knob": "target",
                    "grid": [4, 8, 16, 32], "default": 2},
    "hpa-waiting": {"family": "industry", "bundle": "industry.hpa-waiting", "knob": "target",
                    "grid": [1, 2, 5, 10], "default": 2},
    "hpa-kv": {"family": "industry", "bundle": "industry.hpa-kv", "knob": "target",
               "grid": [0.05, 0.2, 0.4, 0.8], "default": 3},
    "knative-kpa": {"family": "industry", "bundle": "industry.knative-kpa", "knob": "target",
                    "grid": [10, 20, 70, 140], "default": 2},
    "aibrix-apa": {"family": "industry", "bundle": "industry.aibrix-apa", "knob": "target",
                   "grid": [0.05, 0.1, 0.2, 0.5], "default": 3},
    "aibrix-kpa": {"family": "industry", "bundle": "industry.aibrix-kpa", "knob": "target",
                   "grid": [0.05, 0.1, 0.2, 0.5], "default": 3},
    "dynamo-constant": {"family": "industry", "bundle": "industry.dynamo-constant", "knob": "ttft_s",
                        "grid": [0.25, 0.5, 1.0, 2.0], "default": 1},
    "dynamo-kalman": {"family": "industry", "bundle": "industry.dynamo-kalman", "knob": "ttft_s",
                      "grid": [0.25, 0.5, 1.0, 2.0], "default": 1},
    "llmd-wva": {"family": "industry", "bundle": "industry.llmd-wva", "knob": "kv_cache_threshold",
                 "grid": [0.1, 0.2, 0.4, 0.8], "default": 3},
}

# what is not on the board, and why (shown on the page and in the document)
NOT_ON_BOARD = {
    "industry.dynamo-arima": "its ARIMA refit costs ~14 CPU-s per simulated hour (docs/autoscalers.md): the "
                             "synthetic day alone would take ~6 CPU-min per run; the constant and Kalman "
                             "predictors run instead",
    "SageServe LT-I / LT-U / LT-UA": "hourly forecast + ILP: only on the synthetic day (LT-UA); the other traces "
                                     "last an hour or less",
    "SLINFER vs ServerlessLLM": "SLINFER places one model per function on shared CPU/GPU nodes (the `serverless` "
                                "comparison kind); the fleet strategies scale replicas of one model, so the "
                                "function traces run here merged onto one endpoint and SLINFER's own "
                                "comparison stays in docs/reproduction_slinfer.md",
    "operator-level scaling": "an M/M/R plan per operator, not a replica autoscaler the simulator replays "
                              "(docs/reproduction_opscale.md)",
    "PreServe on the synthetic day": "its per-request load predictor and router cost ~0.35 ms of CPU per "
                                     "request (13 CPU-s for an hour of 37k requests): ~3 CPU-min per day run",
    "BurstGPT's own file": "not bundled (large); its request lengths enter through the SLINFER artefact's "
                           "BurstGPT trace",
}
