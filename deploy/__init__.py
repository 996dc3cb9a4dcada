"""Deploy the speech endpoint and the voice agent to AWS with the CDK, and take them down again."""
