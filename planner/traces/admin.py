from django.contrib import admin

from planner.traces.models import Trace


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "format", "source", "requests", "team", "created")
    list_filter = ("format", "source", "team", "created")
    search_fields = ("id", "name", "description", "original_name")
    date_hierarchy = "created"
    raw_id_fields = ("job", "created_by")
