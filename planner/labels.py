"""Names, tags and notes on runs (plans, simulations, comparisons, forecasts): an abstract model and the
one view that edits them."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import models
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404


class Labelled(models.Model):
    tags = models.CharField(max_length=300, blank=True, default="", help_text="comma-separated, e.g. q3, h100")
    notes = models.TextField(blank=True, default="", help_text="free text: why this run, what was decided")

    class Meta:
        abstract = True

    @property
    def tag_list(self) -> list[str]:
        return [t.strip() for t in self.tags.split(",") if t.strip()]


def clean_tags(text: str) -> str:
    seen = []
    for t in (text or "").split(","):
        t = t.strip()[:40]
        if t and t.lower() not in [s.lower() for s in seen]:
            seen.append(t)
    return ", ".join(seen)[:300]


def label_view(model, detail_url: str):
    """POST name/tags/notes for one row of ``model`` the user's team owns, then back to its page."""

    @login_required
    @require_POST
    def view(request, pk: int):
        obj = get_for_user_or_404(request.user, model.objects.all(), pk=pk)
        fields = []
        if "name" in request.POST and hasattr(obj, "name"):
            obj.name = request.POST["name"].strip()[:200] or obj.name
            fields.append("name")
        if "tags" in request.POST:
            obj.tags = clean_tags(request.POST["tags"])
            fields.append("tags")
        if "notes" in request.POST:
            obj.notes = request.POST["notes"][:10000]
            fields.append("notes")
        obj.save(update_fields=fields)
        messages.info(request, "Saved.")
        return redirect(detail_url, pk=obj.pk)

    return view
