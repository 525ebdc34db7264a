"""Sending background tasks: the one place a service hands work to a worker (`chats.tasks`).

Tasks are sent by name, so that no service imports a task module: the tasks import the services they call, and the
import contracts (`lint-imports`) keep it one way. Without a broker (`make run`, the tests) a task runs here, inline,
as `delay` runs it.
"""

from __future__ import annotations

from celery import current_app

# The tasks' names, as the workers know them (a task renamed leaves the messages already queued unknown).
EXPORT_JOB_RUN = "chats.tasks.exports.export_job_run"
INGEST_QUEUED = "chats.ingest_queued"
QUEUE_RULE_RUN = "chats.tasks.rules.queue_rule_run"


def task_send(name: str, *args: object, countdown: float | None = None) -> None:
    """Send the task `name` with these arguments (after `countdown` seconds, with a broker); inline without one."""
    tasks = current_app.tasks
    if name not in tasks:
        # The installed apps' `tasks` modules, found as a worker finds them (`autodiscover_tasks`).
        current_app.loader.import_default_modules()
    task = tasks[name]
    if countdown is None:
        task.apply_async(args=args)
    else:
        task.apply_async(args=args, countdown=countdown)
