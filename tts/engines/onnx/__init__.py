"""The ONNX engine's room: Kokoro-82M's int8 export on onnxruntime (`engine.py`), what it loads
(`assets.py`), its graph split into text side and decoder (`graph_split.py`) and the decoder's int8
convolutions as int8 matrix products (`conv_matmul.py`)."""
