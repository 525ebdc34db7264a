"""Background tasks, one module per concern. Each is idempotent (running it twice leaves what running it once does)
and keeps its progress in the database, so that a task re-delivered after its worker died finishes the job."""

from chats.tasks import exports, ingest, rules

__all__ = ["exports", "ingest", "rules"]
