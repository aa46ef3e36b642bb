"""The published JSON Schemas in docs/schema match the types (run `make schema`)."""

from studroom.services.wire import schema


def test_published_schemas_are_current():
    for name, kind in schema.SCHEMAS.items():
        published = (schema.DEFAULT_DIR / name).read_text(encoding="utf-8")
        assert published == schema.render(kind), f"docs/schema/{name} is stale: run `make schema`"
