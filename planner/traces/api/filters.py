import datetime as dt

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField

from planner.traces.models import Trace


class _DatabaseDateTimeField(IsoDateTimeField):
    """An ISO date-time the database can compare: PostgreSQL refuses UTC offsets of 16 hours and more."""

    def clean(self, value):
        out = super().clean(value)
        if out is not None and out.utcoffset() is not None and abs(out.utcoffset()) >= dt.timedelta(hours=16):
            raise forms.ValidationError("the UTC offset must be within +-15:59")
        return out


class DatabaseDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = _DatabaseDateTimeField


class TraceFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    created_after = DatabaseDateTimeFilter(field_name="created", lookup_expr="gte")
    created_before = DatabaseDateTimeFilter(field_name="created", lookup_expr="lte")
    min_requests = django_filters.NumberFilter(field_name="requests", lookup_expr="gte")
    # "format" is DRF's content-negotiation parameter, hence "file_format".
    file_format = django_filters.CharFilter(field_name="format")

    class Meta:
        model = Trace
        fields = ["name", "file_format", "source", "created_after", "created_before", "min_requests"]
