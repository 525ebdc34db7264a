from django.urls import path

from chats import views, views_audit

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

# The audit section (chats/views_audit.py): auditors, staff and superusers.
urlpatterns += [
    path("audit/", views_audit.audit_list, name="audit_list"),
    path("audit/export/", views_audit.audit_export, name="audit_export"),
    path("audit/<int:pk>/", views_audit.audit_event, name="audit_event"),
]
