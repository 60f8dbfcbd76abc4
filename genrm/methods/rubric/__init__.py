"""The rubric method (RLR3): see :mod:`genrm.methods.rubric.method` for its pieces."""
