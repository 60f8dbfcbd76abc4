"""serving: the FastAPI reward server in front of a judge (``genrm.engine``, ``genrm.methods.rubric.judges``), and its
client."""
