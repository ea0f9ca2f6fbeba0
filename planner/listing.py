"""List pages: filter by name/text, status, kind and date; sort by a whitelisted column; paginate.

Every list says how many rows match and pages through all of them (no silent cut at 100-500 rows).
"""

from __future__ import annotations

from datetime import date

from django.core.paginator import Paginator

PAGE_SIZE = 25


def _date(value: str) -> date | None:
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        return None


def list_context(request, qs, *, sorts: dict[str, str], default_sort: str, search: tuple[str, ...] = ("name",),
                 statuses: list[str] | None = None, status_filter=None, kinds: list[str] | None = None,
                 kind_field: str = "kind", page_size: int = PAGE_SIZE) -> dict:
    """``sorts`` maps a public column name to a model ordering; ``status_filter(qs, value)`` filters by status
    (default: ``job__status``). Returns the context the ``includes/list_controls.html`` partial reads."""
    from django.db.models import Q

    g = request.GET
    q = g.get("q", "").strip()
    if q:
        cond = Q()
        for field in search:
            cond |= Q(**{f"{field}__icontains": q})
        if q.isdigit():
            cond |= Q(pk=int(q))
        qs = qs.filter(cond)
    status = g.get("status", "")
    if status and statuses and status in statuses:
        qs = status_filter(qs, status) if status_filter else qs.filter(job__status=status)
    kind = g.get("kind", "")
    if kind and kinds and kind in kinds:
        qs = qs.filter(**{kind_field: kind})
    since, until = _date(g.get("from", "")), _date(g.get("to", ""))
    if since:
        qs = qs.filter(created__date__gte=since)
    if until:
        qs = qs.filter(created__date__lte=until)
    sort = g.get("sort", default_sort)
    column = sort.lstrip("-")
    if column not in sorts:
        sort, column = default_sort, default_sort.lstrip("-")
    field = sorts[column]
    qs = qs.order_by(("-" if sort.startswith("-") else "") + field, "-id")
    page = Paginator(qs, page_size).get_page(g.get("page"))
    return {"page": page, "rows": page.object_list, "total": page.paginator.count, "sort": sort,
            "filters": {"q": q, "status": status, "kind": kind, "from": g.get("from", ""), "to": g.get("to", "")},
            "statuses": statuses or [], "kinds": kinds or [], "sort_columns": list(sorts)}
