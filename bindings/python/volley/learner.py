"""volley.learner: a Python learner's transport over libvolley (work in progress)."""
__all__ = []
