from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _sync_builtin(sender, using="default", **kwargs):
    from django.db import connections

    from planner.hardware.models import Deployment
    from planner.hardware.services import sync_builtin

    if Deployment._meta.db_table not in connections[using].introspection.table_names():
        return  # e.g. `migrate hardware zero`
    sync_builtin()


class HardwareConfig(AppConfig):
    name = "planner.hardware"
    label = "hardware"
    verbose_name = "Hardware catalogue"

    def ready(self) -> None:
        # The built-in catalogue (planner/catalogue/data/builtin.json) is loaded after every migrate,
        # so a fresh database and every test database have it, and an updated JSON is picked up.
        post_migrate.connect(_sync_builtin, sender=self, dispatch_uid="hardware.sync_builtin")
