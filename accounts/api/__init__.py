"""The accounts API: tokens, the signed-in user, the OpenAPI document, and the
pieces every API shares (errors, pagination, parsers, schema, authentication)."""
