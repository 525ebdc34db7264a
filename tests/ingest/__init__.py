"""The parsers, one module per input format, on the fixture documents of ``tests.factories.documents``."""
