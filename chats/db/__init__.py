"""Database plumbing below the services, for PostgreSQL only: ``copy`` writes rows by binary COPY."""
