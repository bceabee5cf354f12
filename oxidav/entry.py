"""The ``oxidav`` command's entry point. ``oxidav push`` is a client: it runs without importing
the server's rooms (a smaller, faster process); every other command is ``oxidav.cli``."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["push"]:
        from oxidav.push.cli import main as push_main

        return push_main(args[1:])
    from oxidav.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
