"""Application Auto Scaling, recorded and shown, not applied (`control.py` over `shapes.py`)."""
