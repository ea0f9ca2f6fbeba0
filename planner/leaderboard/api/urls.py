from django.urls import path

from planner.leaderboard.api.views import leaderboard

urlpatterns = [path("leaderboard/", leaderboard, name="api-leaderboard")]
