"""Entry point: ``python -m bench NAME [ARGS...]``; ``python -m bench`` lists the benchmarks.

Each benchmark is a module ``bench/NAME.py`` with ``main(argv: list[str]) -> int``. A benchmark
that gates a speed change compares BEFORE and AFTER in one run, checks that both give the same
answers, and exits non-zero unless AFTER wins. Record figures in bench/RESULTS.md.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def available() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.iter_modules([str(Path(__file__).parent)])
        if not info.name.startswith("_")
    )


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help"}:
        print("usage: python -m bench NAME [ARGS...]\n\nbenchmarks:")
        for name in available():
            print(f"  {name}")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in available():
        print(f"unknown benchmark {name!r}; known: {', '.join(available())}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.{name}")
    result: int = module.main(rest)
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
