"""A local DynamoDB-like server (JSON 1.0 protocol) on 127.0.0.1 that answers each request
with the next of a script: the botocore tests send real API calls to it."""

from __future__ import annotations

import json
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: What a scripted answer can be: (status, error type or None, x-amz-retry-after in ms or None).
OK = (200, None, None)
ANSWERS = {
    "ok": OK,
    "500": (500, "InternalServerError", None),
    "503": (503, "ServiceUnavailable", None),
    "throttle": (400, "ThrottlingException", None),
    "provisioned": (400, "ProvisionedThroughputExceededException", None),
    "slow down": (503, "ThrottlingException", "1500"),
    "429": (429, None, None),
    "bad": (400, "ValidationException", None),
    "hint": (500, "InternalServerError", "9000"),
    "crc": OK,  # with an x-amz-crc32 that is not its body's: DynamoDB's corrupted response
    "garbled crc": OK,  # with an x-amz-crc32 that is no number at all
}
#: The answers whose x-amz-crc32 header does not match the body (see RetryDDBChecksumError).
CORRUPTED = {"crc"}


class AwsServer:
    """Answers each request with the next of ``script`` (names of ANSWERS; *otherwise* once
    it runs out), and records the target of each request."""

    def __init__(self, otherwise: str = "ok") -> None:
        self.script: list[str] = []
        self.otherwise = otherwise
        self.seen: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms pause between headers and body

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.seen.append(self.headers.get("X-Amz-Target", ""))
                name = server.script.pop(0) if server.script else server.otherwise
                status, error, retry_after = ANSWERS[name]
                body = (
                    {"TableNames": ["t"]}
                    if error is None and status == 200
                    else (
                        {"__type": f"com.amazonaws.dynamodb.v20120810#{error}", "message": name}
                        if error
                        else {}
                    )
                )
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.0")
                self.send_header("Content-Length", str(len(data)))
                if retry_after is not None:
                    self.send_header("x-amz-retry-after", retry_after)
                if name in CORRUPTED:
                    self.send_header("x-amz-crc32", str((zlib.crc32(data) + 1) & 0xFFFFFFFF))
                if name == "garbled crc":
                    self.send_header("x-amz-crc32", "0x1f-not-a-checksum")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> AwsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()


def dynamodb(url: str, max_attempts: int | None = None):
    """A real botocore DynamoDB client on *url*, standard retry mode, fake credentials."""
    import botocore.session
    from botocore.config import Config

    retries = {"mode": "standard"}
    if max_attempts is not None:
        retries["total_max_attempts"] = max_attempts
    return botocore.session.get_session().create_client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries=retries, connect_timeout=2, read_timeout=2),
    )


def outage_process(results, *job) -> None:
    """A spawned process's target: *results* gets what outage_calls returns."""
    results.put(outage_calls(*job))


def outage_calls(url: str, redis_port: int, name: str, calls: int, start) -> tuple[int, int]:
    """One process of a fleet (spawned): a DynamoDB client on botocore_retries whose quota is
    the fleet's (a RetryQuota on a RedisStore), making *calls* calls to a server that fails
    them all.  Returns (calls whose quota ran out, retries it was allowed) - the retries
    counted by the client's own telemetry."""
    import botocore.exceptions
    import redis
    from fleet_workers import wait_for_first_exchange

    from backoff_iter import RetryQuota, instrument
    from backoff_iter.fleet import RedisStore
    from backoff_iter.interop import botocore_retries

    instrument.disable()  # no log line per retry from this process
    store = RedisStore(redis.Redis(host="127.0.0.1", port=redis_port), name, sync_interval=0.02)
    quota = RetryQuota(store=store)
    events: list = []
    client = botocore_retries(
        dynamodb(url), budget=quota, observe=events.append, sleep=lambda seconds: None
    )
    wait_for_first_exchange(quota)
    start.wait(30)
    refused = 0
    for _ in range(calls):
        try:
            client.list_tables()
        except botocore.exceptions.ClientError as error:
            refused += bool(error.response["ResponseMetadata"].get("RetryQuotaReached"))
    store.close()
    return refused, sum(event.kind == "retry" for event in events)
