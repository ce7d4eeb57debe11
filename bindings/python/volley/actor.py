"""volley.actor: actors for Python environments (work in progress)."""
__all__ = []
