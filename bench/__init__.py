"""oxidav benchmarks: ``python -m bench NAME [ARGS...]`` runs ``bench/NAME.py``'s ``main``."""
