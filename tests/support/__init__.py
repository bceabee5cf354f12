"""Helpers shared by the test suite (live servers, HTTP requests)."""
