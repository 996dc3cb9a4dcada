"""`python -m emulator up|down|status|logs|env` (see emulator.cli)."""

import sys

from emulator.cli import main

if __name__ == "__main__":
    sys.exit(main())
