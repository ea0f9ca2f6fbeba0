from django.contrib import admin

from planner.plans.models import CapacityPlan


@admin.register(CapacityPlan)
class CapacityPlanAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "hours", "solver_status", "feasible", "total_cost", "team", "created", "tags")
    list_filter = ("solver_status", "feasible", "team", "created")
    search_fields = ("id", "name", "tags", "notes")
    date_hierarchy = "created"
    raw_id_fields = ("job", "created_by")
