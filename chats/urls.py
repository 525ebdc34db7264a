from django.urls import path

from chats import views

app_name = "chats"

urlpatterns = [
    path("", views.home, name="home"),
    path("conversations/", views.conversation_list, name="conversation_list"),
    path("conversations/next/", views.next_unreviewed, name="next_unreviewed"),
    path("conversations/<uuid:uuid>/", views.thread, name="thread"),
    path("conversations/<uuid:uuid>/feedback/", views.feedback_save, name="feedback_save"),
    path("conversations/<uuid:uuid>/feedback/form/", views.feedback_form, name="feedback_form"),
    path(
        "conversations/<uuid:uuid>/feedback/<uuid:feedback_uuid>/delete/",
        views.feedback_delete,
        name="feedback_delete",
    ),
    path("conversations/<uuid:uuid>/status/", views.review_status, name="review_status"),
    path("conversations/<uuid:uuid>/branch/", views.active_branch, name="active_branch"),
    path("artifacts/", views.artifact_list, name="artifact_list"),
    # Artifact ids are kept as given: dots, slashes and any length (reverse() quotes what a path cannot hold).
    path("artifacts/<artifact_id:artifact_id>/", views.artifact_detail, name="artifact_detail"),
]
