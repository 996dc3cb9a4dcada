# The emulator's echo container as a SageMaker image (compose/echo.yaml, the docker-runtime tests).
# Build from the repository root:
#   docker build -f emulator/echo.Dockerfile -t voice-agent-aws/echo:latest .
# BASE_IMAGE: any image with python3 and its venv module (emulator/images/base.py makes one offline).
ARG BASE_IMAGE=python:3.12-slim

# build-config/ (pip's index and CA, see build-config/README.md) stays in this stage.
FROM ${BASE_IMAGE} AS build
ENV PIP_CONFIG_FILE=/tmp/build-config/pip.conf PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY build-config/ /tmp/build-config/
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install "websockets>=14"

FROM ${BASE_IMAGE}
LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true
COPY --from=build /opt/venv /opt/venv
WORKDIR /opt/program
COPY emulator/__init__.py emulator/echo_container.py ./emulator/
COPY emulator/wire/__init__.py emulator/wire/wsframes.py ./emulator/wire/
ENV PATH=/opt/venv/bin:$PATH ECHO_HOST=0.0.0.0 ECHO_PORT=8080 PYTHONUNBUFFERED=1
EXPOSE 8080
ENTRYPOINT ["python", "-m", "emulator.echo_container"]
CMD ["serve"]
