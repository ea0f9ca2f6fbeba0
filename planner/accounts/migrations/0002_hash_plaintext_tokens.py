"""API tokens used to be DRF's plain-text rows (authtoken_token). Keep every issued key working, but as a hashed,
expiring knox token, and delete the plain-text copies."""

from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone


def hash_plaintext_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if "authtoken_token" not in connection.introspection.table_names():
        return  # a database created after the switch
    from knox.crypto import hash_token

    AuthToken = apps.get_model("knox", "AuthToken")
    ttl = settings.REST_KNOX.get("TOKEN_TTL", timedelta(days=30))
    with connection.cursor() as cursor:
        cursor.execute("SELECT key, user_id FROM authtoken_token")
        rows = cursor.fetchall()
        for key, user_id in rows:
            AuthToken(digest=hash_token(key), token_key=key[:15], user_id=user_id,
                      expiry=timezone.now() + ttl).save(force_insert=True)
        cursor.execute("DELETE FROM authtoken_token")


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("knox", "0009_extend_authtoken_field"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(hash_plaintext_tokens, migrations.RunPython.noop)]
