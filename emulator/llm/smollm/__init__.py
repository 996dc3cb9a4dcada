"""SmolLM2-135M-Instruct, the emulated Bedrock's default model: `weights.py` fetches and converts the
weights once, `model.py` runs the decoder thread that answers every request in turns."""
