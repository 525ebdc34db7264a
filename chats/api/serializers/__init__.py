"""The API's serializers, one module per resource: what each endpoint sends (and documents), the input of its
writes and the query parameters of its reads. `common` holds what they share."""
