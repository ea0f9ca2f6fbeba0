from django.urls import path

from planner.leaderboard import views

app_name = "leaderboard"
urlpatterns = [path("", views.leaderboard, name="page")]
