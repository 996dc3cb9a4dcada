"""The Bedrock Runtime face (Converse, ConverseStream) and the reply models behind it: SmolLM2 on
transformers (the default), the paced script, or an OpenAI-compatible server."""
