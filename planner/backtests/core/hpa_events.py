"""HPA events as a replica record: ``kubectl get events -o json`` (or ``kubectl get events.events.k8s.io -o json``)
of the HorizontalPodAutoscalers that scaled the window's endpoints. Django-free.

The HPA controller records every rescale as an event with reason ``SuccessfulRescale`` and the message
``New size: N; reason: ...`` (kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go, ``reconcileAutoscaler``:
``a.eventRecorder.Eventf(hpa, v1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", ...)``). Each
such event sets its endpoint's count from its time on; other events are skipped. The HPA's name names the endpoint:
the endpoint ``region/model`` with ``/`` and ``.`` written ``-`` (``us-west/llama2-70b`` -> ``us-west-llama2-70b``),
or the endpoint itself. Times are ISO 8601 (``lastTimestamp``, else ``eventTime``, else ``firstTimestamp``; in the
events.k8s.io form ``deprecatedLastTimestamp`` / ``eventTime``), placed on the trace's clock by ``origin``.

Events say only what changed, so a record holds until the next event (no gap check), and the count before an
endpoint's first rescale is unknown: that first event must be at or before the trace's start (export events from
before the window), else the file is refused naming the event.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from planner.backtests.core.replica_errors import MAX_ROWS, ReplicaFileError, whole_number

NEW_SIZE = re.compile(r"New size:\s*(-?[0-9.]+)")
RESCALE = "SuccessfulRescale"


def is_event_list(doc) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("items"), list) and "data" not in doc


def k8s_name(endpoint: str) -> str:
    return re.sub(r"[/.]", "-", endpoint).lower()


def _when(item: dict, label: str, origin: datetime | None) -> float:
    raw = (item.get("lastTimestamp") or item.get("deprecatedLastTimestamp") or item.get("eventTime")
           or item.get("firstTimestamp") or item.get("deprecatedFirstTimestamp"))
    if not raw:
        raise ReplicaFileError(f"replicas {label}, column timestamp", "has no lastTimestamp, eventTime or "
                                                                      "firstTimestamp")
    if origin is None:
        raise ReplicaFileError("origin", "HPA events have ISO times: give the ISO time of the trace's t = 0")
    try:
        when = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise ReplicaFileError(f"replicas {label}, column timestamp", f"{raw!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    org = origin if origin.tzinfo is not None else origin.replace(tzinfo=UTC)
    return (when - org).total_seconds()


def event_records(doc: dict, endpoints: list[str], *, origin: datetime | None) -> list[tuple]:
    """(label, t_s, endpoint, count) of every rescale event (replicas.assemble checks and orders them); errors name
    ``items[i]``."""
    names = {k8s_name(e): e for e in endpoints} | {e: e for e in endpoints}
    records = []
    for i, item in enumerate(doc["items"]):
        label = f"items[{i}]"
        if not isinstance(item, dict):
            raise ReplicaFileError(f"replicas {label}", "is not an event object")
        obj = item.get("involvedObject") or item.get("regarding") or {}
        message = str(item.get("message") or item.get("note") or "")
        if item.get("reason") != RESCALE or obj.get("kind", "HorizontalPodAutoscaler") != "HorizontalPodAutoscaler":
            continue
        if len(records) >= MAX_ROWS:
            raise ReplicaFileError(f"replicas {label}", f"more than {MAX_ROWS:,} rescale events")
        name = str(obj.get("name") or "")
        if name not in names:
            raise ReplicaFileError(f"replicas {label}, column endpoint",
                                   f"HPA {name!r} names no endpoint of the scenario's fleet",
                                   f"name the HPA after its endpoint: one of {sorted(k8s_name(e) for e in endpoints)}")
        m = NEW_SIZE.search(message)
        if not m:
            raise ReplicaFileError(f"replicas {label}, column replicas", f"message {message[:80]!r} has no "
                                                                         "'New size: N'")
        count = whole_number(m.group(1), f"replicas {label}, column replicas", "a whole number of replicas")
        records.append((label, _when(item, label, origin), names[name], str(count)))
    if not records:
        raise ReplicaFileError("replicas items", f"has no {RESCALE} event of a HorizontalPodAutoscaler",
                               "export with kubectl get events --field-selector reason=SuccessfulRescale -o json")
    return records


def check_known_start(out: dict, records: list[tuple]) -> None:
    """Refuse an endpoint whose first rescale comes after the trace's start (its count before is unknown)."""
    for ep, pts in out.items():
        if pts[0][0] > 0:
            label = next(r[0] for r in records if r[2] == ep and r[1] == pts[0][0])
            raise ReplicaFileError(f"replicas {label}, column timestamp",
                                   f"the first rescale of {ep} is {pts[0][0]:g} s after the trace's start: the count "
                                   "before it is unknown", "export events from before the window, or give the CSV")
