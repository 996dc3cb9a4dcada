"""STS: GetCallerIdentity, what the deploy commands confirm credentials with (awsQuery)."""
