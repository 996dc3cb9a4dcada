"""The torch engine's room: hexgrad's `kokoro.KModel` on torch (`engine.py`), its strict loading
(`kmodel.py`), the export of hexgrad's layout from the shipped int8 weights (`export.py`), and the GPU
image's build-time check of the torch version (`check_torch.py`)."""
