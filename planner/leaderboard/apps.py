from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "planner.leaderboard"
    label = "leaderboard"
    verbose_name = "Policy leaderboard"
