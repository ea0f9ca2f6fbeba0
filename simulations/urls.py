from django.urls import path

from simulations import serverless_views, views

app_name = "simulations"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("<int:pk>/", views.run_detail, name="detail"),
    path("serverless/", serverless_views.serverless_page, name="serverless"),  # issue 18
]
