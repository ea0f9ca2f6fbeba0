from django.contrib import admin

from planner.accounts.models import Membership, Team

admin.site.register(Team)
admin.site.register(Membership)
