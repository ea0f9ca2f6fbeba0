from django.urls import path

from planner.backtests import views

app_name = "backtests"
urlpatterns = [
    path("", views.backtest_list, name="list"),
    path("new/", views.backtest_create, name="create"),
    path("<int:pk>/", views.backtest_detail, name="detail"),
]
