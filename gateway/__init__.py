"""OpenAI's audio API in front of SageMaker endpoints, run where the client is: `python -m gateway
--endpoint-name kokoro-82m` (README.md). Not in any image: it calls the endpoint with the credentials of
whoever runs it (boto3's chain, SigV4), so it belongs on the caller's side, not in the tts container."""
