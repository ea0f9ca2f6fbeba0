from django.contrib import admin

from forecasts.models import ForecastRun


@admin.register(ForecastRun)
class ForecastRunAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "trace", "team", "created", "tags")
    list_filter = ("team", "created")
    search_fields = ("id", "name", "tags", "notes", "trace__name")
    date_hierarchy = "created"
    raw_id_fields = ("job", "trace", "created_by")
