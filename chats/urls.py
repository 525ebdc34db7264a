from django.urls import path

from chats.views import (
    artifacts,
    audit,
    conversations,
    dashboard,
    exports,
    feedback,
    review,
    review_items,
    saved,
    threads,
    trends,
)

app_name = "chats"

urlpatterns = [
    path("", dashboard.home, name="home"),
    path("conversations/", conversations.conversation_list, name="conversation_list"),
    path("conversations/next/", conversations.next_unreviewed, name="next_unreviewed"),
    path("conversations/<uuid:uuid>/", threads.thread, name="thread"),
    path("conversations/<uuid:uuid>/messages/", threads.thread_messages, name="thread_messages"),
    path("conversations/<uuid:uuid>/feedback/", feedback.feedback_save, name="feedback_save"),
    path("conversations/<uuid:uuid>/feedback/form/", feedback.feedback_form, name="feedback_form"),
    path(
        "conversations/<uuid:uuid>/feedback/<uuid:feedback_uuid>/delete/",
        feedback.feedback_delete,
        name="feedback_delete",
    ),
    path("conversations/<uuid:uuid>/status/", feedback.review_status, name="review_status"),
    path("conversations/<uuid:uuid>/branch/", threads.active_branch, name="active_branch"),
    path("artifacts/", artifacts.artifact_list, name="artifact_list"),
    # Artifact ids are kept as given: dots, slashes and any length (reverse() quotes what a path cannot hold).
    path("artifacts/<artifact_id:artifact_id>/", artifacts.artifact_detail, name="artifact_detail"),
]

# Trends (chats/trends.py): read like the dashboard.
urlpatterns += [path("trends/", trends.trends, name="trends")]

# Export jobs (chats/exports.py): every reading role, each person their own jobs.
urlpatterns += [
    path("exports/", exports.export_jobs, name="export_jobs"),
    path("exports/new/", exports.export_job_create, name="export_job_create"),
]

# Saved views of the conversation list (chats/saved.py): every reading role its own; leads share.
urlpatterns += [
    path("views/", saved.saved_view_list, name="saved_view_list"),
    path("views/menu/", saved.saved_view_menu, name="saved_view_menu"),
    path("views/new/", saved.saved_view_create_page, name="saved_view_create"),
    path("views/<uuid:uuid>/share/", saved.saved_view_share, name="saved_view_share"),
    path("views/<uuid:uuid>/delete/", saved.saved_view_delete_page, name="saved_view_delete"),
]

# The audit section (chats/audit.py): auditors, staff and superusers.
urlpatterns += [
    path("audit/", audit.audit_list, name="audit_list"),
    path("audit/export/", audit.audit_export, name="audit_export"),
    path("audit/<int:pk>/", audit.audit_event, name="audit_event"),
]

# Team review (chats/review.py): queues, reviewing an item, adjudication, and adding to a queue.
urlpatterns += [
    path("queues/", review.queue_list, name="queue_list"),
    path("queues/new/", review.queue_create, name="queue_create"),
    path("queues/<int:pk>/", review.queue_detail, name="queue_detail"),
    path("queues/<int:pk>/edit/", review.queue_update, name="queue_update"),
    path("queues/<int:pk>/next/", review.queue_next, name="queue_next"),
    path("queues/<int:pk>/assign/", review.queue_assign, name="queue_assign"),
    path("queues/<int:pk>/adjudicate/", review_items.queue_adjudicate, name="queue_adjudicate"),
    path("queues/<int:pk>/items/<int:item>/", review_items.review_page, name="queue_item"),
    path("queues/<int:pk>/items/<int:item>/draft/", review_items.review_draft, name="review_draft"),
    path("queues/<int:pk>/items/<int:item>/submit/", review_items.review_submit, name="review_submit"),
    path("queues/<int:pk>/items/<int:item>/resolve/", review_items.item_resolve, name="item_resolve"),
    path("conversations/add-to-queue/", review.queue_add, name="queue_add"),
]
