"""The Django project. Its Celery application is loaded with it, so that tasks sent from Django reach it."""

from masterbrain_site.celery import app as celery_app

__all__ = ("celery_app",)
