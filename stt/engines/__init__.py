"""The models: Whisper (faster-whisper on CTranslate2) for the words, Silero VAD (ONNX) for speech."""
