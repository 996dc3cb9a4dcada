"""CloudWatch: metrics (PutMetricData, the EMF lines of every replica's log, ListMetrics, GetMetricData,
GetMetricStatistics), alarms evaluated locally, dashboards stored (awsJson1.0 under `POST /`)."""
