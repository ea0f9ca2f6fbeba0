from rest_framework import serializers

from planner.jobs.models import Job


class JobSerializer(serializers.ModelSerializer):
    duration_s = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = Job
        fields = [
            "id", "kind", "status", "progress", "message", "params", "result", "last_error",
            "parent", "created", "started", "finished", "duration_s",
        ]
        read_only_fields = fields
