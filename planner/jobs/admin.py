from django.contrib import admin

from planner.jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "progress", "team", "parent", "created", "started", "finished", "message")
    list_filter = ("status", "kind", "team", "created")
    search_fields = ("id", "kind", "message")
    date_hierarchy = "created"
    raw_id_fields = ("parent", "created_by")
    readonly_fields = ("created",)
