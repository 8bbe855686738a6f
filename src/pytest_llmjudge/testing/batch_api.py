"""The loopback server's batch APIs: OpenAI Files + Batches and Anthropic Message Batches.

:class:`BatchStore` keeps uploaded files and batches in memory and answers the batch
endpoints in the wire formats the real SDKs parse (``openai`` 3.x ``client.files.create``,
``client.batches.create/retrieve/cancel``, ``client.files.content``; ``anthropic`` 2.x
``client.messages.batches.create/retrieve/cancel/results``). :class:`~pytest_llmjudge.
testing.server.LoopbackServer` routes these paths here:

OpenAI
    ``POST /v1/files`` (multipart ``file`` + ``purpose``) -> a ``file`` object;
    ``GET /v1/files/{id}``; ``GET /v1/files/{id}/content`` -> the bytes;
    ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``,
    ``metadata``) -> a ``batch`` object, ``status: "validating"``;
    ``GET /v1/batches/{id}``; ``POST /v1/batches/{id}/cancel``.
    An input line is ``{"custom_id", "method": "POST", "url": endpoint, "body"}``; an
    output-file line is ``{"id", "custom_id", "response": {"status_code": 200,
    "request_id", "body": <chat.completion>}, "error": null}``; failed lines go to the
    error file with their status code and an error body.
Anthropic
    ``POST /v1/messages/batches`` (``requests: [{custom_id, params}]``) -> a
    ``message_batch`` (``processing_status: "in_progress"``);
    ``GET /v1/messages/batches/{id}``; ``POST /v1/messages/batches/{id}/cancel``;
    ``GET /v1/messages/batches/{id}/results`` -> JSONL lines ``{"custom_id", "result":
    {"type": "succeeded", "message"} | {"type": "errored", "error"} | {"type":
    "canceled"}}``. ``results_url`` is absolute, as the real API's is.

Processing: a batch's lines are answered in the background as soon as it is created, each
by the server's responder exactly like an online completion (recorded in
``LoopbackServer.batch_requests``, not in ``requests``), but without the server's latency
and without random or queued faults. A responder ``Reply`` with a fault or an error status
makes that line fail (429 for RATE_LIMIT, 500/503/529 as online, 500 for the transport
faults). A batch ends once every line is answered *and* ``batch_delay`` seconds have passed
since its creation (read at each retrieve, so a test can hold batches pending and release
them); a cancelled batch ends at once, its unanswered lines ``canceled`` (Anthropic) or
failed (OpenAI).

Degenerate cases: an OpenAI input file with a line that is not JSON, lacks ``custom_id``,
repeats one, or names another URL makes the batch ``failed`` with ``errors`` (no output
file); an Anthropic create with a bad or repeated ``custom_id`` or no requests answers 400;
an unknown id answers 404; results of a batch that has not ended answer 400; an empty
output or error file is not created (its id is ``null``).
"""

from __future__ import annotations

import asyncio
import email.parser
import email.policy
import json
import re
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

BatchProvider = Literal["openai", "anthropic"]

LineResult = tuple[int, dict[str, Any]]
"""``(status code, body)`` of one answered line: a completion body or an error body."""

LineProcessor = Callable[[BatchProvider, str, dict[str, Any], int], Awaitable[LineResult]]
"""``(provider, endpoint path, request body, line index) -> (status, body)``."""

_ANTHROPIC_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ROUTES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^/v1/files$"), "files"),
    (re.compile(r"^/v1/files/(?P<id>[^/]+)$"), "file"),
    (re.compile(r"^/v1/files/(?P<id>[^/]+)/content$"), "file_content"),
    (re.compile(r"^/v1/batches$"), "batches"),
    (re.compile(r"^/v1/batches/(?P<id>[^/]+)$"), "batch"),
    (re.compile(r"^/v1/batches/(?P<id>[^/]+)/cancel$"), "batch_cancel"),
    (re.compile(r"^/v1/messages/batches$"), "message_batches"),
    (re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)$"), "message_batch"),
    (re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)/results$"), "message_batch_results"),
    (re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)/cancel$"), "message_batch_cancel"),
)
_ROUTE_LABELS = {
    "files": "/v1/files",
    "file": "/v1/files/{id}",
    "file_content": "/v1/files/{id}/content",
    "batches": "/v1/batches",
    "batch": "/v1/batches/{id}",
    "batch_cancel": "/v1/batches/{id}/cancel",
    "message_batches": "/v1/messages/batches",
    "message_batch": "/v1/messages/batches/{id}",
    "message_batch_results": "/v1/messages/batches/{id}/results",
    "message_batch_cancel": "/v1/messages/batches/{id}/cancel",
}
_METHODS = {
    "files": "POST",
    "file": "GET",
    "file_content": "GET",
    "batches": "POST",
    "batch": "GET",
    "batch_cancel": "POST",
    "message_batches": "POST",
    "message_batch": "GET",
    "message_batch_results": "GET",
    "message_batch_cancel": "POST",
}
BATCH_ENDPOINTS = frozenset({"/v1/chat/completions"})
"""OpenAI batch endpoints the loopback server can answer."""


def route(path: str) -> tuple[str, str | None] | None:
    """``(route name, object id)`` for a batch path, or None."""
    for pattern, name in _ROUTES:
        match = pattern.match(path)
        if match is not None:
            return name, match.groupdict().get("id")
    return None


def route_label(path: str) -> str:
    """The path with ids replaced by ``{id}`` (for per-path counters)."""
    found = route(path)
    return path if found is None else _ROUTE_LABELS[found[0]]


def _rfc3339(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass
class StoredFile:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


@dataclass
class StoredBatch:
    id: str
    provider: BatchProvider
    created: float
    lines: list[tuple[str, dict[str, Any]]]
    """``(custom_id, request body)`` in input order."""
    endpoint: str = "/v1/chat/completions"
    input_file_id: str = ""
    metadata: dict[str, Any] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, LineResult] = field(default_factory=dict)
    cancelled_at: float | None = None
    ended_at: float | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    task: asyncio.Task[None] | None = None


class BatchStore:
    """Files and batches of one loopback server; every method runs on the server's loop."""

    def __init__(self, process_line: LineProcessor, base_url: Callable[[], str]) -> None:
        self._process_line = process_line
        self._base_url = base_url
        self._lock = threading.Lock()
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, StoredBatch] = {}
        self.batch_delay = 0.0
        self.lines_answered = 0
        self.batches_created = 0

    # -- dispatch ------------------------------------------------------------------------

    async def handle(
        self,
        name: str,
        object_id: str | None,
        method: str,
        headers: dict[str, str],
        body: bytes,
        error: Callable[[int, str], tuple[int, bytes, str]],
    ) -> tuple[int, bytes, str]:
        """Answer one batch-API request: ``(status, body bytes, content type)``."""
        if method != _METHODS[name]:
            return error(405, f"Method {method} not allowed for {_ROUTE_LABELS[name]}")
        if name == "files":
            return self._create_file(headers, body, error)
        if name == "batches":
            return self._create_openai_batch(body, error)
        if name == "message_batches":
            return self._create_anthropic_batch(body, error)
        assert object_id is not None
        if name in ("file", "file_content"):
            stored = self.files.get(object_id)
            if stored is None:
                return error(404, f"No such File object: {object_id}")
            if name == "file":
                return _ok(stored.as_json())
            return 200, stored.data, "application/octet-stream"
        batch = self.batches.get(object_id)
        if batch is None or batch.provider != ("anthropic" if name.startswith("message_") else "openai"):
            return error(404, f"No such batch: {object_id}")
        if name in ("batch_cancel", "message_batch_cancel"):
            self._cancel(batch)
        if name == "message_batch_results":
            self._settle(batch)
            if batch.ended_at is None:
                return error(400, f"Message Batch {object_id} has not ended yet")
            return 200, self._anthropic_results(batch), "application/binary"
        self._settle(batch)
        return _ok(self._openai_json(batch) if batch.provider == "openai" else self._anthropic_json(batch))

    # -- creation ------------------------------------------------------------------------

    def _create_file(
        self, headers: dict[str, str], body: bytes, error: Callable[[int, str], tuple[int, bytes, str]]
    ) -> tuple[int, bytes, str]:
        content_type = headers.get("content-type", "")
        if not content_type.lower().startswith("multipart/form-data"):
            return error(400, "file uploads must be multipart/form-data")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = (part.get_filename(), payload)
        if "file" not in fields or "purpose" not in fields:
            return error(400, "a file upload needs 'file' and 'purpose'")
        filename, data = fields["file"]
        stored = StoredFile(
            id=f"file-loopback{secrets.token_hex(8)}",
            filename=filename or "upload",
            purpose=fields["purpose"][1].decode("utf-8", "replace"),
            data=data,
            created_at=int(time.time()),
        )
        self.files[stored.id] = stored
        return _ok(stored.as_json())

    def _create_openai_batch(
        self, body: bytes, error: Callable[[int, str], tuple[int, bytes, str]]
    ) -> tuple[int, bytes, str]:
        params = _json_object(body)
        if params is None:
            return error(400, "request body must be a JSON object")
        endpoint = params.get("endpoint")
        if endpoint not in BATCH_ENDPOINTS:
            return error(400, f"endpoint must be one of {sorted(BATCH_ENDPOINTS)}, got {endpoint!r}")
        if params.get("completion_window") != "24h":
            return error(400, "completion_window must be '24h'")
        stored = self.files.get(str(params.get("input_file_id")))
        if stored is None:
            return error(400, f"No such File object: {params.get('input_file_id')}")
        lines: list[tuple[str, dict[str, Any]]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        for number, raw in enumerate(stored.data.decode("utf-8", "replace").splitlines(), start=1):
            if not raw.strip():
                continue
            line = _json_object(raw.encode("utf-8"))
            custom_id = line.get("custom_id") if line is not None else None
            problem = None
            if line is None:
                problem = "line is not a JSON object"
            elif not isinstance(custom_id, str) or not custom_id:
                problem = "custom_id is missing"
            elif custom_id in seen:
                problem = f"custom_id {custom_id!r} is repeated"
            elif line.get("url") != endpoint or line.get("method") != "POST":
                problem = f"each line must be POST {endpoint}"
            elif not isinstance(line.get("body"), dict):
                problem = "body is not an object"
            if problem is not None:
                errors.append({"code": "invalid_request", "line": number, "message": problem, "param": None})
                continue
            assert line is not None and isinstance(custom_id, str)
            seen.add(custom_id)
            lines.append((custom_id, line["body"]))
        batch = StoredBatch(
            id=f"batch_loopback{secrets.token_hex(8)}",
            provider="openai",
            created=time.time(),
            lines=lines if not errors else [],
            endpoint=str(endpoint),
            input_file_id=stored.id,
            metadata=params.get("metadata") if isinstance(params.get("metadata"), dict) else None,
            errors=errors,
        )
        if errors:
            batch.ended_at = batch.created
        self._start(batch)
        payload = self._openai_json(batch)
        if not errors:
            payload["status"] = "validating"
        return _ok(payload)

    def _create_anthropic_batch(
        self, body: bytes, error: Callable[[int, str], tuple[int, bytes, str]]
    ) -> tuple[int, bytes, str]:
        params = _json_object(body)
        requests = params.get("requests") if params is not None else None
        if not isinstance(requests, list) or not requests:
            return error(400, "requests: a non-empty list is required")
        lines: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for index, entry in enumerate(requests):
            custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
            if not isinstance(custom_id, str) or not _ANTHROPIC_CUSTOM_ID.match(custom_id):
                return error(400, f"requests.{index}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$")
            if custom_id in seen:
                return error(400, f"requests.{index}.custom_id: {custom_id!r} is repeated")
            if not isinstance(entry.get("params"), dict):
                return error(400, f"requests.{index}.params: an object is required")
            seen.add(custom_id)
            lines.append((custom_id, entry["params"]))
        batch = StoredBatch(
            id=f"msgbatch_loopback{secrets.token_hex(8)}", provider="anthropic", created=time.time(), lines=lines
        )
        self._start(batch)
        return _ok(self._anthropic_json(batch))

    def _start(self, batch: StoredBatch) -> None:
        with self._lock:
            self.batches[batch.id] = batch
            self.batches_created += 1
        if batch.lines:
            batch.task = asyncio.get_running_loop().create_task(self._run(batch))

    async def _run(self, batch: StoredBatch) -> None:
        path = batch.endpoint if batch.provider == "openai" else "/v1/messages"

        async def answer(custom_id: str, body: dict[str, Any]) -> None:
            with self._lock:
                index = self.lines_answered
                self.lines_answered += 1
            result = await self._process_line(batch.provider, path, body, index)
            if batch.cancelled_at is None:
                batch.results[custom_id] = result

        await asyncio.gather(*(answer(custom_id, body) for custom_id, body in batch.lines))

    def _cancel(self, batch: StoredBatch) -> None:
        if batch.ended_at is None and batch.cancelled_at is None:
            batch.cancelled_at = time.time()
            if batch.task is not None:
                batch.task.cancel()

    def cancel_all(self) -> list[asyncio.Task[None]]:
        """Stop background processing (server shutdown); returns the tasks cancelled."""
        tasks = [b.task for b in self.batches.values() if b.task is not None and not b.task.done()]
        for task in tasks:
            task.cancel()
        return tasks

    # -- state ---------------------------------------------------------------------------

    def _settle(self, batch: StoredBatch) -> None:
        """End the batch when it is due (all lines answered and the delay over) or cancelled."""
        if batch.ended_at is not None:
            return
        now = time.time()
        if batch.cancelled_at is not None:
            batch.ended_at = now
        elif len(batch.results) == len(batch.lines) and now >= batch.created + self.batch_delay:
            batch.ended_at = now
        else:
            return
        if batch.provider == "openai":
            output: list[str] = []
            failed: list[str] = []
            for number, (custom_id, _) in enumerate(batch.lines):
                result = batch.results.get(custom_id)
                status, body = result if result is not None else (500, _cancelled_error())
                line = {
                    "id": f"batch_req_loopback{number:06d}",
                    "custom_id": custom_id,
                    "response": {"status_code": status, "request_id": f"req_batch{number:06d}", "body": body},
                    "error": None,
                }
                (output if status == 200 else failed).append(json.dumps(line, ensure_ascii=False))
            batch.output_file_id = self._add_result_file(batch, output, "output")
            batch.error_file_id = self._add_result_file(batch, failed, "errors")

    def _add_result_file(self, batch: StoredBatch, lines: list[str], kind: str) -> str | None:
        if not lines:
            return None
        stored = StoredFile(
            id=f"file-loopback{secrets.token_hex(8)}",
            filename=f"{batch.id}_{kind}.jsonl",
            purpose="batch_output",
            data=("\n".join(lines) + "\n").encode("utf-8"),
            created_at=int(time.time()),
        )
        self.files[stored.id] = stored
        return stored.id

    def _openai_json(self, batch: StoredBatch) -> dict[str, Any]:
        completed = sum(1 for status, _ in batch.results.values() if status == 200)
        failed = len(batch.results) - completed
        status = "in_progress"
        if batch.errors:
            status = "failed"
        elif batch.cancelled_at is not None:
            status = "cancelled" if batch.ended_at is not None else "cancelling"
            failed = len(batch.lines) - completed
        elif batch.ended_at is not None:
            status = "completed"
        created = int(batch.created)
        ended = int(batch.ended_at) if batch.ended_at is not None else None
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": created,
            "in_progress_at": None if batch.errors else created,
            "expires_at": created + 86400,
            "finalizing_at": ended if status == "completed" else None,
            "completed_at": ended if status == "completed" else None,
            "failed_at": ended if status == "failed" else None,
            "expired_at": None,
            "cancelling_at": int(batch.cancelled_at) if batch.cancelled_at is not None else None,
            "cancelled_at": ended if status == "cancelled" else None,
            "request_counts": {"total": len(batch.lines), "completed": completed, "failed": failed},
            "metadata": batch.metadata,
        }

    def _anthropic_json(self, batch: StoredBatch) -> dict[str, Any]:
        ended = batch.ended_at is not None
        succeeded = errored = 0
        if ended:
            for status, _ in batch.results.values():
                if status == 200:
                    succeeded += 1
                else:
                    errored += 1
        canceled = len(batch.lines) - succeeded - errored if ended else 0
        if batch.cancelled_at is not None:
            processing_status = "ended" if ended else "canceling"
        else:
            processing_status = "ended" if ended else "in_progress"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": processing_status,
            "request_counts": {
                "processing": 0 if ended else len(batch.lines),
                "succeeded": succeeded,
                "errored": errored,
                "canceled": canceled,
                "expired": 0,
            },
            "ended_at": _rfc3339(batch.ended_at) if batch.ended_at is not None else None,
            "created_at": _rfc3339(batch.created),
            "expires_at": _rfc3339(batch.created + 86400),
            "archived_at": None,
            "cancel_initiated_at": _rfc3339(batch.cancelled_at) if batch.cancelled_at is not None else None,
            "results_url": f"{self._base_url()}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    def _anthropic_results(self, batch: StoredBatch) -> bytes:
        lines = []
        for custom_id, _ in batch.lines:
            result = batch.results.get(custom_id)
            if result is None:
                entry: dict[str, Any] = {"type": "canceled"}
            elif result[0] == 200:
                entry = {"type": "succeeded", "message": result[1]}
            else:
                entry = {"type": "errored", "error": result[1]}
            lines.append(json.dumps({"custom_id": custom_id, "result": entry}, ensure_ascii=False))
        return ("\n".join(lines) + "\n").encode("utf-8")

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "files": len(self.files),
                "batches_created": self.batches_created,
                "batch_requests": self.lines_answered,
            }


def _cancelled_error() -> dict[str, Any]:
    return {"error": {"message": "Batch was cancelled", "type": "batch_cancelled", "param": None, "code": None}}


def _json_object(data: bytes) -> dict[str, Any] | None:
    try:
        parsed = json.loads(data) if data else None
    except (ValueError, UnicodeDecodeError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _ok(obj: dict[str, Any]) -> tuple[int, bytes, str]:
    return 200, json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), "application/json"
