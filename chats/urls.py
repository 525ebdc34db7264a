from django.urls import path

from chats import views

app_name = "chats"

urlpatterns = [
    path("", views.home, name="home"),
    path("conversations/<uuid:uuid>/", views.thread, name="thread"),
]
