"""Pluggable policies, registered by name: autoscalers, routers (region / endpoint / instance), schedulers.

A later policy is one class plus one ``@register_*("name")`` line; the loop never changes.
"""

from simulations.engine.policies import (  # noqa: F401,E402  (registers)  # noqa: F401,E402  (SageServe LT-I/U/UA + NIW queue)
    aibrix,
    autoscalers,
    baselines,
    chiron,
    dynamo_planner,
    example,
    hpa,
    knative_kpa,
    llmd_wva,
    llumnix_migration,
    longterm,
    niw_queue,
    preserve,
    recorded,
    routers,
    schedulers,
)
from simulations.engine.policies.registry import (  # noqa: F401
    AUTOSCALERS,
    ENDPOINT_ROUTERS,
    INSTANCE_ROUTERS,
    REGION_ROUTERS,
    SCHEDULERS,
    PolicyKind,
    get_policy,
    register,
)
