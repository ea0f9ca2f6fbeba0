"""The five families of the comparison builder, each with its options and one sentence per option, taken from the
registries that run them: the fleet strategies (core/variants.STRATEGIES), the strategy bundles (core/bundles, each
bundle's own description) and the serverless systems (core/serverless.DESCRIPTIONS). Operator-level plans are a
kind of their own (one plan, model level against operator level)."""

from __future__ import annotations

from planner.comparisons.core.bundles import bundle_names, get_bundle
from planner.comparisons.core.serverless import DEFAULT_SYSTEMS, DESCRIPTIONS
from planner.comparisons.core.variants import STRATEGIES

BASELINES = ("static", "reactive-siloed", "reactive-unified")
# the strategies a fleet comparison runs when the request names none (form, API and CLI): the baseline and
# SageServe's three long-term scalers
DEFAULT_STRATEGIES = ("reactive-unified", "lt-i", "lt-u", "lt-ua")
FLEET_FAMILIES = (
    ("baselines", "Baselines", "what a fleet does without a forecast: fixed counts or utilisation thresholds"),
    ("sageserve", "SageServe", "hourly forecasts and an ILP set the instance counts per region and model"),
    ("preserve", "PreServe", "window forecasts and a load-aware router, against Llumnix-like and static fleets"),
    ("chiron", "Chiron", "batch-size backpressure per instance and a global queue for batch work"),
    ("industry", "Industry autoscalers", "what operators run today (Kubernetes HPA, Knative, AIBrix, NVIDIA Dynamo, "
                                         "llm-d), each seeing scraped vLLM metrics with its project's defaults"),
)
# the default scenario of a serverless comparison started from the form: 32 Llama-2-7B models sharing
# 4 CPU and 4 GPU nodes for 5 minutes (a small version of the SLINFER artefact's setting)
SERVERLESS_DEFAULT = {"kind": "serverless", "name": "SLINFER: 32 x Llama-2-7B on 4 CPU + 4 GPU nodes",
                      "model": "llama2-7b", "workload": {"models": 32, "duration_s": 300},
                      "nodes": {"cpu": 4, "gpu": 4}}


def _option(kind: str, name: str, text: str) -> dict:
    return {"field": "strategies" if kind == "strategy" else "bundles", "name": name, "text": text}


def fleet_families() -> list[dict]:
    """[{key, title, text, options: [{field, name, text}]}]: every fleet strategy and bundle, grouped."""
    names = bundle_names()  # first: a family's bundles module registers its bare strategies too
    groups = {key: {"key": key, "title": title, "text": text, "options": []} for key, title, text in FLEET_FAMILIES}
    for name, text in STRATEGIES.items():
        family = ("baselines" if name in BASELINES else "sageserve" if name.startswith("lt-") else
                  "chiron" if name in ("chiron", "llumnix-batch") else "baselines")
        groups[family]["options"].append(_option("strategy", name, text))
    for name in names:
        bundle = get_bundle(name)
        family = "sageserve" if bundle.family.startswith("sageserve") else bundle.family
        groups.setdefault(family, {"key": family, "title": family, "text": "", "options": []})
        groups[family]["options"].append(_option("bundle", name, bundle.description))
    return list(groups.values())


def serverless_systems() -> list[dict]:
    return [{"name": name, "text": text, "default": name in DEFAULT_SYSTEMS} for name, text in DESCRIPTIONS.items()]
