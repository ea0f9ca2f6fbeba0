"""A disaggregated endpoint of the scenario JSON -> its two engine endpoints (prefill pool, decode pool).

An endpoint is either aggregated (``deployment``) or disaggregated (``prefill_pool`` + ``decode_pool`` and
optionally ``kv_link``); disagg.py simulates the second kind. Every refusal names the field (ScenarioError, a 4xx
through the API, forms and CLI): a prefill pool without a decode pool, a link of bandwidth 0 (the schema),
a decode pool whose KV cache cannot hold one request of the endpoint, a deployment without the KV bytes per
token the transfer needs, an autoscaler that would scale only the prefill pool (``check_pool_scaling``).
"""

from __future__ import annotations

from simulations.engine.fleet.disagg import LINK_CLASSES, link_bandwidth
from simulations.engine.scenario.config import EndpointConfig, KVLinkConfig, ScenarioError

# Autoscalers that size both pools of a disaggregated endpoint: static keeps each pool's count (the static P/D ratio
# baseline); dynamo-planner sizes the prefill pool by TTFT and the decode pool by ITL. Every other autoscaler acts on
# the endpoints requests reach, which is the prefill pool only, and is refused with disaggregated endpoints.
POOL_AWARE_AUTOSCALERS = ("static", "dynamo-planner")


def check_pool_scaling(endpoints, autoscaler: str, where: str) -> None:
    """Refuse an autoscaler that would scale only the prefill pool of a disaggregated endpoint (engine endpoints)."""
    if autoscaler in POOL_AWARE_AUTOSCALERS:
        return
    split = [f"{e.region}/{e.model}" for e in endpoints if e.pool == "prefill"]
    if split:
        raise ScenarioError(where, f"the {autoscaler!r} autoscaler scales only the prefill pool of a disaggregated "
                            f"endpoint ({', '.join(split)}): its decode pool would stay at its initial count",
                            hint="use static (fixed pool counts) or dynamo-planner (the prefill pool by TTFT, the "
                                 "decode pool by ITL), or make the endpoint aggregated")


def is_disaggregated(e) -> bool:
    return e.prefill_pool is not None or e.decode_pool is not None


def check_kind(e, where: str) -> None:
    """Exactly one kind per endpoint: ``deployment``, or both pools."""
    if e.prefill_pool is not None and e.decode_pool is None:
        raise ScenarioError(f"{where}.decode_pool", "is required with prefill_pool: a disaggregated endpoint "
                            "needs a decode pool for the requests its prefill pool prefills",
                            hint='add "decode_pool": {"deployment": ..., "initial": N}')
    if e.decode_pool is not None and e.prefill_pool is None:
        raise ScenarioError(f"{where}.prefill_pool", "is required with decode_pool",
                            hint='add "prefill_pool": {"deployment": ..., "initial": N}')
    if e.prefill_pool is not None and e.deployment is not None:
        raise ScenarioError(f"{where}.deployment", "an endpoint is aggregated (deployment) or disaggregated "
                            "(prefill_pool + decode_pool), not both", hint="remove deployment or the two pools")
    if e.prefill_pool is None and e.deployment is None:
        raise ScenarioError(f"{where}.deployment", "is required (or prefill_pool and decode_pool)",
                            hint="a deployment name from 'deployments', the catalogue, or an inline spec")
    if e.prefill_pool is None and e.kv_link is not None:
        raise ScenarioError(f"{where}.kv_link", "applies to disaggregated endpoints only",
                            hint="remove kv_link, or give prefill_pool and decode_pool")


def _nvlink_gbs(gpu: str) -> float | None:
    try:
        from planner.catalogue.physics import datasheet  # Django-free built-in data
    except ImportError:
        return None
    try:
        return float(datasheet(gpu).link_gbs)
    except (KeyError, LookupError, ValueError, AttributeError):
        return None


def _link(e, pre, dec, where: str) -> KVLinkConfig:
    kv = e.kv_link
    cls = kv.link_class if kv is not None else "infiniband"
    bw = kv.bandwidth_gb_s if kv is not None else None
    lat = kv.latency_s if kv is not None else None
    if bw is None:
        nv = None
        if cls == "nvlink":
            figs = [_nvlink_gbs(s.gpu) for s in (pre, dec)]
            if any(f is None for f in figs):
                raise ScenarioError(f"{where}.kv_link.bandwidth_gb_s", f"no NVLink figure for GPU "
                                    f"{pre.gpu!r} / {dec.gpu!r} in the GPU datasheets",
                                    hint="give bandwidth_gb_s (GB/s between the two instances)")
            nv = min(figs)
        bw = link_bandwidth(cls, pre, dec, nv)
    if lat is None:
        lat = LINK_CLASSES[cls][1]
    return KVLinkConfig(link_class=cls, bandwidth_gb_s=float(bw), latency_s=float(lat))


def _bounds(pool, where: str) -> dict:
    hi = pool.max_instances if pool.max_instances is not None else max(pool.initial, 20)
    if pool.min_instances > hi:
        raise ScenarioError(f"{where}.min", f"min ({pool.min_instances}) is above max ({hi})")
    return {"initial": pool.initial, "min_instances": pool.min_instances, "max_instances": hi}


def one_request_tokens(pre, dec) -> int:
    """The KV of the largest request the endpoint takes: its context limit (max_model_len of either pool's
    deployment, the smaller), else the prefill deployment's max_batch_tokens (the prompt one prefill iteration is
    sized for)."""
    limits = [s.max_model_len for s in (pre, dec) if s.max_model_len]
    return min(limits) if limits else pre.max_batch_tokens


def expand(e, where: str, region: str, model: str | None, resolve) -> tuple[EndpointConfig, EndpointConfig]:
    """The prefill and decode ``EndpointConfig`` of the disaggregated endpoint ``e`` (validated schema model).
    ``resolve(value, where)`` turns a deployment reference into a DeploymentSpec."""
    pw, dw = f"{where}.prefill_pool", f"{where}.decode_pool"
    pre = resolve(e.prefill_pool.deployment, f"{pw}.deployment")
    dec = resolve(e.decode_pool.deployment, f"{dw}.deployment")
    model = model or pre.model
    if dec.model != pre.model:
        raise ScenarioError(f"{dw}.deployment", f"serves model {dec.model!r}, the prefill pool {pre.model!r}",
                            hint="both pools of an endpoint serve the same model")
    for spec, w in ((pre, pw), (dec, dw)):
        if not spec.kv_bytes_per_token > 0:
            raise ScenarioError(f"{w}.deployment.kv_bytes_per_token", "must be > 0: the KV transfer's size is KV "
                                "bytes per token x prompt tokens", hint="e.g. Llama-2-70B (GQA, fp16): 327680")
    need = one_request_tokens(pre, dec)
    if dec.kv_capacity_tokens < need:
        raise ScenarioError(f"{dw}.deployment.kv_capacity_tokens",
                            f"{dec.kv_capacity_tokens} tokens of KV cache is less than one request of this endpoint "
                            f"({need} tokens)", hint="a decode deployment with more KV memory (GPUs / TP), or a "
                            "smaller max_model_len")
    link = _link(e, pre, dec, where)
    common = {"region": region, "model": model, "weights_in_region": e.weights_in_region}
    prefill = EndpointConfig(deployment=pre, pool="prefill", kv_link=link, **common, **_bounds(e.prefill_pool, pw))
    decode = EndpointConfig(deployment=dec, pool="decode", **common, **_bounds(e.decode_pool, dw))
    return prefill, decode
