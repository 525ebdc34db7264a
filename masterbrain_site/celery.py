"""The Celery application: configured from the Django settings whose names start with CELERY_, tasks found in each
installed app's `tasks` module. `make worker` runs a worker of it; without a broker, tasks run inline."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "masterbrain_site.settings")

app = Celery("masterbrain_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
