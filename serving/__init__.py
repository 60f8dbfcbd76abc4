"""serving: the FastAPI reward server in front of a reward method (``genrm.methods``) and its judge (``genrm.engine``),
and its client."""
