"""The autoscalers operators run today, as strategy bundles (simulations/engine/policies/hpa, knative_kpa, aibrix,
dynamo_planner, llmd_wva). Django-free.

Each bundle runs one autoscaler with its project's defaults (cited in the policy's code and in
docs/autoscalers.md); the routers, scheduler and fleet bounds are the scenario's. Pick them on the comparison page
(bundle checkboxes), in the API (``"bundles": ["industry.hpa-running", ...]``) or the CLI (``manage.py compare
SCENARIO.json --bundles industry.hpa-running,industry.knative-kpa``); a single run names the autoscaler in
``strategy.autoscaler`` (``hpa``, ``knative-kpa``, ``aibrix-apa``, ``aibrix-kpa``, ``dynamo-planner``,
``llmd-wva``) with its knobs in ``strategy.params``.
"""

from __future__ import annotations

from planner.comparisons.core.bundles import Bundle, register_bundle
from planner.comparisons.core.variants import BUNDLE_STRATEGIES

for _name, _desc in {
    "hpa": "Kubernetes HPA (+ KEDA on vLLM metrics): ceil(current x metric / target), 10 % tolerance, "
           "300 s scale-down stabilisation, 4 pods / 100 % per 15 s up",
    "knative-kpa": "Knative KPA: 60 s stable / 6 s panic windows on in-flight requests, target 70 per pod",
    "aibrix-apa": "AIBrix APA: per-pod metric / target with +/-10 % tolerances, x2 / 2 rate limits",
    "aibrix-kpa": "AIBrix KPA: 180 s stable / 60 s panic windows, panic at 2x",
    "dynamo-planner": "NVIDIA Dynamo SLA planner: predicted load every 180 s sized for TTFT / ITL targets",
    "llmd-wva": "llm-d workload variant autoscaler: +/-1 replica on KV / queue saturation every 60 s",
}.items():
    BUNDLE_STRATEGIES.setdefault(_name, _desc)

HPA = {"sync 15 s, tolerance 0.1, scale-down stabilisation 300 s": "kubernetes/kubernetes "
       "pkg/controller/podautoscaler/config/v1alpha1/defaults.go lines 40, 46, 58",
       "scale-up max(4 pods, 100 %) / 15 s; scale-down 100 % / 15 s": "kubernetes/kubernetes "
       "pkg/apis/autoscaling/v2/defaults.go lines 29-31, 50-53",
       "target per pod": "ours (the operator sets it; no upstream default)",
       "scrape every 15 s": "ours (a common Prometheus interval)"}
for _metric, _target in (("running", 16.0), ("waiting", 5.0), ("kv", 0.8)):
    register_bundle(Bundle(name=f"industry.hpa-{_metric}", strategy="hpa", family="industry",
                           description=f"Kubernetes HPA + KEDA on vLLM's {_metric} metric, target {_target:g} per pod",
                           params={"metric": _metric, "target": _target}, sources=dict(HPA)))
register_bundle(Bundle(name="industry.knative-kpa", strategy="knative-kpa", family="industry",
                       description="Knative KPA with its defaults (target 70 in-flight requests per pod)",
                       sources={"stable 60 s, panic 10 %, threshold 200 %, target 100 x 0.7, rates 1000 / 2":
                                "knative/serving pkg/autoscaler/config/config.go lines 39-66",
                                "scrape 1 s, decide every 2 s": "knative/serving pkg/autoscaler/metrics/collector.go "
                                "line 37, pkg/autoscaler/scaling/multiscaler.go line 36"}))
AIBRIX = {"rates 2 / 2, tolerances 0.1, cooldowns 0 / 300 s, panic 2": "vllm-project/aibrix "
          "pkg/controller/podautoscaler/context/context.go lines 108-115",
          "windows 180 s / 60 s": "vllm-project/aibrix pkg/controller/podautoscaler/metrics/client.go lines 28-29",
          "gpu_cache_usage_perc target 0.5": "vllm-project/aibrix benchmarks/scenarios/autoscaling/"
          "deepseek-llm-7b-chat/apa.yaml lines 22-23"}
for _kind in ("apa", "kpa"):
    register_bundle(Bundle(name=f"industry.aibrix-{_kind}", strategy=f"aibrix-{_kind}", family="industry",
                           description=f"AIBrix {_kind.upper()} on KV-cache usage, target 0.5 per pod",
                           sources=dict(AIBRIX)))
for _pred in ("constant", "arima", "kalman"):
    register_bundle(Bundle(name=f"industry.dynamo-{_pred}", strategy="dynamo-planner", family="industry",
                           description=f"Dynamo SLA planner, {_pred} load predictor, TTFT 0.5 s / ITL 50 ms",
                           params={"load_predictor": _pred},
                           sources={"interval 180 s, TTFT 500 ms, ITL 50 ms, Kalman 1.0 / 0.1 / 10": "ai-dynamo/dynamo "
                                    "components/src/dynamo/planner/defaults.py lines 29, 74-84",
                                    "aggregated engine: prefill share + decode share": "ours (Dynamo scales "
                                    "disaggregated prefill and decode pools)"}))
register_bundle(Bundle(name="industry.llmd-wva", strategy="llmd-wva", family="industry",
                       description="llm-d WVA saturation analyzer with its defaults",
                       sources={"KV 0.80, queue 5, spare triggers 0.1 / 3": "llm-d/llm-d-workload-variant-autoscaler "
                                "charts/workload-variant-autoscaler/values.yaml lines 64-67",
                                "60 s loop, 1 min peaks": "internal/config/loader.go line 87, "
                                "internal/collector/registration/saturation.go lines 33, 43"}))
