"""serving: the FastAPI reward server, its judge backends and its client (built on ``genrm``)."""
