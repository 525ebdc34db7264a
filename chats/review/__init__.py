"""Team review: pure building blocks (no ORM) for queues, rubrics and agreement."""
