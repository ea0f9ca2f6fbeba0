import django_filters

from planner.traces.models import Trace


class TraceFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    created_after = django_filters.IsoDateTimeFilter(field_name="created", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created", lookup_expr="lte")
    min_requests = django_filters.NumberFilter(field_name="requests", lookup_expr="gte")
    # "format" is DRF's content-negotiation parameter, hence "file_format".
    file_format = django_filters.CharFilter(field_name="format")

    class Meta:
        model = Trace
        fields = ["name", "file_format", "source", "created_after", "created_before", "min_requests"]
