"""The observability stack: an endpoint's dashboard and alarms, on the container's own metrics (the EMF
lines it writes to stdout: facts.METRICS_NAMESPACE, `Service=tts`; CloudWatch Logs extracts them, no
permission needed beyond the endpoint's log writing) and SageMaker's (`AWS/SageMaker`, `EndpointName`,
`VariantName`).

The dashboard's body is deploy/dashboard.py's, the one the emulator's manifest carries too. Alarms:
first audio p90 over `first_audio_alarm_ms` for 3 of 3 minutes; the error rate (typed errors over
requests) over 5 % in 5 minutes; sessions over the capacity `/ping` claims for
`over_capacity_alarm_minutes` minutes in a row; SageMaker's Invocation5XXErrors in a minute and
ModelSetupTime over 5 minutes (ModelSetupTime exists only for serverless endpoints: on a real-time one
it has no data and the alarm stays OK, `notBreaching`). With `alarm_email` an SNS topic with that email
subscription receives every alarm's ALARM and OK; without it the alarms only change state. The alarms
and the dashboard need no IAM statement of ours: CloudWatch publishes to a topic of the same account
without one.

A stack of its own, after the endpoint's, so that it can be changed (a threshold, an email) without
touching the endpoint.
"""

from __future__ import annotations

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from deploy.config import DeployConfig, EndpointSettings
from deploy.dashboard import ERROR_RATE, SAGEMAKER_NAMESPACE, dashboard_body, dashboard_name
from facts import ERRORS_METRIC, FIRST_AUDIO_METRIC, METRICS_NAMESPACE, OVER_CAPACITY_METRIC

MINUTE = Duration.minutes(1)
FIVE_MINUTES = Duration.minutes(5)


def product_metric(name: str, statistic: str, period: Duration = MINUTE) -> cloudwatch.Metric:
    """The tts container's EMF metric `name`."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"Service": "tts"},
        statistic=statistic,
        period=period,
    )


class ObservabilityStack(Stack):
    """The dashboard and the alarms of one endpoint (`alarms` by their role, `topic` when emailed)."""

    def __init__(self, scope: Construct, stack_id: str, *, config: DeployConfig, settings: EndpointSettings):
        super().__init__(scope, stack_id, description=f"{settings.name}: dashboard and alarms")
        self.settings = settings
        self.alarms = self._alarms(config)
        self.topic: sns.Topic | None = None
        if config.alarm_email:
            self.topic = sns.Topic(self, "AlarmTopic", display_name=f"{settings.name} alarms")
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
            for alarm in self.alarms.values():
                alarm.add_alarm_action(actions.SnsAction(self.topic))
                alarm.add_ok_action(actions.SnsAction(self.topic))
        definition = settings.definition
        body = dashboard_body(settings.name, definition.variant, Aws.REGION, config.first_audio_alarm_ms)
        self.dashboard = cloudwatch.CfnDashboard(
            self,
            "Dashboard",
            dashboard_name=dashboard_name(settings.name),
            dashboard_body=self.to_json_string(body),
        )

    def endpoint_metric(self, name: str, statistic: str) -> cloudwatch.Metric:
        """SageMaker's metric `name` of this endpoint's variant."""
        dimensions = {"EndpointName": self.settings.name, "VariantName": self.settings.definition.variant}
        return cloudwatch.Metric(
            namespace=SAGEMAKER_NAMESPACE,
            metric_name=name,
            dimensions_map=dimensions,
            statistic=statistic,
            period=MINUTE,
        )

    def alarm(
        self,
        construct_id: str,
        name: str,
        description: str,
        metric: cloudwatch.IMetric,
        threshold: float,
        periods: int = 1,
    ) -> cloudwatch.Alarm:
        """Every alarm fires above its threshold; no data (an idle endpoint) is not breaching."""
        return cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=f"{self.settings.name}-{name}",
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            evaluation_periods=periods,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _alarms(self, config: DeployConfig) -> dict[str, cloudwatch.Alarm]:
        minutes = config.over_capacity_alarm_minutes
        error_rate = cloudwatch.MathExpression(
            expression=ERROR_RATE,
            using_metrics={
                "errors": product_metric(ERRORS_METRIC, "Sum", FIVE_MINUTES),
                "requests": product_metric(FIRST_AUDIO_METRIC, "SampleCount", FIVE_MINUTES),
            },
            label="errors (% of requests)",
            period=FIVE_MINUTES,
        )
        return {
            "first_audio": self.alarm(
                "FirstAudioP90",
                "first-audio-p90",
                f"p90 time to first audio over {config.first_audio_alarm_ms:g} ms",
                product_metric(FIRST_AUDIO_METRIC, "p90"),
                config.first_audio_alarm_ms,
                periods=3,
            ),
            "error_rate": self.alarm(
                "ErrorRate", "error-rate", "typed errors over 5 % of requests in 5 minutes", error_rate, 5
            ),
            "over_capacity": self.alarm(
                "SessionsOverCapacity",
                "sessions-over-capacity",
                f"more sessions than a replica keeps gap-free for {minutes} minutes: scale out, or lower "
                "the target concurrency",
                product_metric(OVER_CAPACITY_METRIC, "Maximum"),
                0,
                periods=minutes,
            ),
            "invocation_5xx": self.alarm(
                "Invocation5XXErrors",
                "invocation-5xx",
                "the endpoint answered 5xx (SageMaker's Invocation5XXErrors)",
                self.endpoint_metric("Invocation5XXErrors", "Sum"),
                0,
            ),
            "model_setup": self.alarm(
                "ModelSetupTime",
                "model-setup-time",
                "a model took over 5 minutes to set up (SageMaker's ModelSetupTime)",
                self.endpoint_metric("ModelSetupTime", "Maximum"),
                FIVE_MINUTES.to_seconds() * 1_000_000,  # microseconds
            ),
        }
