"""Tests of the Python SDK (standard library unittest).

Run from the repository root: ``python3 -m unittest discover -s python/tests -t python``.
"""
