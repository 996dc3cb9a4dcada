"""What the command line (emulator/__main__.py) does beside running the emulator: start, find and stop a
detached one (daemon.py), and print what a running one answers (views.py)."""
