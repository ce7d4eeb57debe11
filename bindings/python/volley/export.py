"""volley.export: weights exported by `volley export` in NumPy and PyTorch (work in progress)."""
__all__ = []
