"""serving: the FastAPI reward server in front of a judge (``genrm.engine``, ``genrm.judge``), and its client."""
