"""`python -m deploy`: the command line (deploy/cli.py)."""

from deploy.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
