from django.contrib import admin

from planner.comparisons.models import Comparison, VariantResult


class VariantResultInline(admin.TabularInline):
    model = VariantResult
    fields = ("key", "strategy", "scheduler", "status", "wall_s", "job")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "baseline", "status", "team", "created", "tags")
    list_filter = ("team", "created")
    search_fields = ("id", "name", "tags", "notes", "baseline")
    date_hierarchy = "created"
    raw_id_fields = ("job", "created_by")
    inlines = [VariantResultInline]
