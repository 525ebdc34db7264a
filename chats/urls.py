from django.urls import path

from chats import views, views_audit, views_exports, views_review, views_saved, views_trends

app_name = "chats"

urlpatterns = [
    path("", views.home, name="home"),
    path("conversations/", views.conversation_list, name="conversation_list"),
    path("conversations/next/", views.next_unreviewed, name="next_unreviewed"),
    path("conversations/<uuid:uuid>/", views.thread, name="thread"),
    path("conversations/<uuid:uuid>/messages/", views.thread_messages, name="thread_messages"),
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

# Trends (chats/views_trends.py): read like the dashboard.
urlpatterns += [path("trends/", views_trends.trends, name="trends")]

# Export jobs (chats/views_exports.py): every reading role, each person their own jobs.
urlpatterns += [
    path("exports/", views_exports.export_jobs, name="export_jobs"),
    path("exports/new/", views_exports.export_job_create, name="export_job_create"),
]

# Saved views of the conversation list (chats/views_saved.py): every reading role its own; leads share.
urlpatterns += [
    path("views/", views_saved.saved_view_list, name="saved_view_list"),
    path("views/new/", views_saved.saved_view_create_page, name="saved_view_create"),
    path("views/<uuid:uuid>/share/", views_saved.saved_view_share, name="saved_view_share"),
    path("views/<uuid:uuid>/delete/", views_saved.saved_view_delete_page, name="saved_view_delete"),
]

# The audit section (chats/views_audit.py): auditors, staff and superusers.
urlpatterns += [
    path("audit/", views_audit.audit_list, name="audit_list"),
    path("audit/export/", views_audit.audit_export, name="audit_export"),
    path("audit/<int:pk>/", views_audit.audit_event, name="audit_event"),
]

# Team review (chats/views_review.py): queues, reviewing an item, adjudication, and adding to a queue.
urlpatterns += [
    path("queues/", views_review.queue_list, name="queue_list"),
    path("queues/new/", views_review.queue_create, name="queue_create"),
    path("queues/<int:pk>/", views_review.queue_detail, name="queue_detail"),
    path("queues/<int:pk>/edit/", views_review.queue_update, name="queue_update"),
    path("queues/<int:pk>/next/", views_review.queue_next, name="queue_next"),
    path("queues/<int:pk>/assign/", views_review.queue_assign, name="queue_assign"),
    path("queues/<int:pk>/adjudicate/", views_review.queue_adjudicate, name="queue_adjudicate"),
    path("queues/<int:pk>/items/<int:item>/", views_review.review_page, name="queue_item"),
    path("queues/<int:pk>/items/<int:item>/draft/", views_review.review_draft, name="review_draft"),
    path("queues/<int:pk>/items/<int:item>/submit/", views_review.review_submit, name="review_submit"),
    path("queues/<int:pk>/items/<int:item>/resolve/", views_review.item_resolve, name="item_resolve"),
    path("conversations/add-to-queue/", views_review.queue_add, name="queue_add"),
]
