"""The observability stack: the endpoint's dashboard and alarms, on the container's own metrics (the
EMF lines it writes to stdout: facts.METRICS_NAMESPACE, `Service=tts`; CloudWatch Logs extracts them, no
permission needed beyond the endpoint's log writing) and SageMaker's (`AWS/SageMaker`, `EndpointName`,
`VariantName`).

Alarms: first audio p90 over `first_audio_alarm_ms` for 3 of 3 minutes; the error rate (typed errors
over requests) over 5 % in 5 minutes; sessions over the capacity `/ping` claims for
`over_capacity_alarm_minutes` minutes in a row; SageMaker's Invocation5XXErrors in a minute and
ModelSetupTime over 5 minutes (ModelSetupTime exists only for serverless endpoints: on a real-time one
it has no data and the alarm stays OK, `notBreaching`). With `alarm_email` an SNS topic with that email
subscription receives every alarm's ALARM and OK; without it the alarms only change state. The alarms
and the dashboard need no IAM statement of ours: CloudWatch publishes to a topic of the same account
without one.

A stack of its own, after the endpoint's, so that the local rehearsal can leave it out
(deploy/parts/speech.py) until the emulator's CloudFormation creates CloudWatch resources.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from deploy.config import DeployConfig
from deploy.naming import VARIANT_NAME
from facts import ERRORS_METRIC, FIRST_AUDIO_METRIC, METRICS_NAMESPACE, OVER_CAPACITY_METRIC, STALLS_METRIC

TTS = {"Service": "tts"}
AGENT = {"Service": "agent"}
MINUTE = Duration.minutes(1)


def _tts(name: str, statistic: str, label: str | None = None, period: Duration = MINUTE) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map=TTS,
        statistic=statistic,
        period=period,
        label=label,
    )


class ObservabilityStack(Stack):
    """The dashboard and the alarms of one endpoint (`alarms` by their role, `topic` when emailed)."""

    def __init__(self, scope: Construct, stack_id: str, *, config: DeployConfig, endpoint_name: str):
        super().__init__(scope, stack_id, description=f"{endpoint_name}: dashboard and alarms")
        sagemaker = {"EndpointName": endpoint_name, "VariantName": VARIANT_NAME}

        def endpoint_metric(name: str, statistic: str, period: Duration = MINUTE) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace="AWS/SageMaker",
                metric_name=name,
                dimensions_map=sagemaker,
                statistic=statistic,
                period=period,
            )

        five = Duration.minutes(5)
        error_rate = cloudwatch.MathExpression(
            expression="100 * errors / MAX([errors + requests, 1])",
            using_metrics={
                "errors": _tts(ERRORS_METRIC, "Sum", period=five),
                "requests": _tts(FIRST_AUDIO_METRIC, "SampleCount", period=five),
            },
            label="errors (% of requests)",
            period=five,
        )

        def alarm(
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
                alarm_name=f"{endpoint_name}-{name}",
                alarm_description=description,
                metric=metric,
                threshold=threshold,
                evaluation_periods=periods,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )

        minutes = config.over_capacity_alarm_minutes
        self.alarms = {
            "first_audio": alarm(
                "FirstAudioP90",
                "first-audio-p90",
                f"p90 time to first audio over {config.first_audio_alarm_ms:g} ms",
                _tts(FIRST_AUDIO_METRIC, "p90"),
                config.first_audio_alarm_ms,
                periods=3,
            ),
            "error_rate": alarm(
                "ErrorRate", "error-rate", "typed errors over 5 % of requests in 5 minutes", error_rate, 5
            ),
            "over_capacity": alarm(
                "SessionsOverCapacity",
                "sessions-over-capacity",
                f"more sessions than a replica keeps gap-free for {minutes} minutes: scale out, or lower "
                "the target concurrency",
                _tts(OVER_CAPACITY_METRIC, "Maximum"),
                0,
                periods=minutes,
            ),
            "invocation_5xx": alarm(
                "Invocation5XXErrors",
                "invocation-5xx",
                "the endpoint answered 5xx (SageMaker's Invocation5XXErrors)",
                endpoint_metric("Invocation5XXErrors", "Sum"),
                0,
            ),
            "model_setup": alarm(
                "ModelSetupTime",
                "model-setup-time",
                "a model took over 5 minutes to set up (SageMaker's ModelSetupTime)",
                endpoint_metric("ModelSetupTime", "Maximum"),
                Duration.minutes(5).to_seconds() * 1_000_000,  # microseconds
            ),
        }
        self.topic: sns.Topic | None = None
        if config.alarm_email:
            self.topic = sns.Topic(self, "AlarmTopic", display_name=f"{endpoint_name} alarms")
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
            for alarm in self.alarms.values():
                alarm.add_alarm_action(actions.SnsAction(self.topic))
                alarm.add_ok_action(actions.SnsAction(self.topic))
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"{endpoint_name}-voice",
            widgets=[
                [
                    cloudwatch.GraphWidget(
                        title="Time to first audio (ms)",
                        left=[
                            _tts(FIRST_AUDIO_METRIC, "p50", "tts p50"),
                            _tts(FIRST_AUDIO_METRIC, "p90", "tts p90"),
                            cloudwatch.Metric(
                                namespace=METRICS_NAMESPACE,
                                metric_name=FIRST_AUDIO_METRIC,
                                dimensions_map=AGENT,
                                statistic="p90",
                                period=MINUTE,
                                label="agent turn p90",
                            ),
                        ],
                        left_annotations=[
                            cloudwatch.HorizontalAnnotation(value=config.first_audio_alarm_ms, label="alarm")
                        ],
                    ),
                    cloudwatch.GraphWidget(
                        title="Stalls a listener hears",
                        left=[_tts(STALLS_METRIC, "Sum", "stalls")],
                        right=[_tts("StallSeconds", "Sum", "stall seconds")],
                    ),
                ],
                [
                    cloudwatch.GraphWidget(
                        title="Sessions against capacity (per replica)",
                        left=[
                            _tts("SessionsActive", "Maximum", "sessions"),
                            _tts("Capacity", "Minimum", "capacity"),
                            _tts(OVER_CAPACITY_METRIC, "Maximum", "over capacity"),
                        ],
                        right=[_tts("QueueWait", "p90", "queue wait p90 (ms)")],
                    ),
                    cloudwatch.GraphWidget(
                        title="Errors",
                        left=[
                            _tts(ERRORS_METRIC, "Sum", "typed errors"),
                            endpoint_metric("Invocation5XXErrors", "Sum"),
                        ],
                        right=[error_rate],
                    ),
                    cloudwatch.GraphWidget(
                        title="Invocations per instance",
                        left=[endpoint_metric("InvocationsPerInstance", "Sum")],
                        right=[_tts("RealTimeFactor", "Average", "real-time factor")],
                    ),
                ],
            ],
        )
