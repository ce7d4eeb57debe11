"""Environments written for volley's tests and benchmarks, with Gymnasium's API."""
