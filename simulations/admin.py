from django.contrib import admin

from simulations.models import SimulationRun


@admin.register(SimulationRun)
class SimulationRunAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "strategy", "mode", "requests_simulated", "wall_s", "team", "created", "tags")
    list_filter = ("strategy", "mode", "team", "created")
    search_fields = ("id", "name", "tags", "notes")
    date_hierarchy = "created"
    raw_id_fields = ("job", "created_by")
    exclude = ("result",)  # can be tens of MB of timelines; the run page and the API show it
