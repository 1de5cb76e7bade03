"""What `/openapi.json` says about the bodies and headers that routes read by hand.

Routes read their bodies themselves (authentication first, size limits, spooling), so FastAPI cannot infer them;
these declarations document the wire shapes for readers and for schema-driven fuzzing. They validate nothing:
the routes and services do.
"""

from __future__ import annotations

from typing import Any

from ....wire.quota_fields import QUOTA_FIELDS
from ...services.accounts.roles import ROLES
from ...services.notify.events import EVENTS

__all__ = [
    "ADMISSION_CHECK",
    "EXTERNAL_EVALUATION",
    "EXTERNAL_SCORES",
    "ASSET_PUSH",
    "DATASET_PUSH",
    "DEVICE_CODE",
    "DEVICE_TOKEN",
    "FOLLOWUP",
    "INGEST",
    "MAINTENANCE_DRAIN",
    "PLUGIN_PACKAGE",
    "PLUGIN_PATCH",
    "QUOTA",
    "REFRESH_TOKEN",
    "REGISTER_DATA",
    "SHARE_WEIGHT",
    "SUBMISSION",
    "USER_CODE",
    "NEW_TOKEN",
    "NEW_USER",
    "NOTIFY_HOOK",
    "PLAYGROUND_EXTEND",
    "PLAYGROUND_START",
    "SERVICE_EXTEND",
    "SERVICE_KEY",
    "SERVICE_PROXY",
    "SERVICE_START",
]

_TEXT: dict[str, Any] = {"type": "string"}
_NUMBER: dict[str, Any] = {"type": "number"}


def _json(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": True}
    if required:
        schema["required"] = list(required)
    return {"requestBody": {"required": bool(required), "content": {"application/json": {"schema": schema}}}}


_GZIP = {"application/gzip": {"schema": {"type": "string", "format": "binary"}}}

DEVICE_CODE = _json({"device": _TEXT})
DEVICE_TOKEN = _json({"device_code": _TEXT}, ("device_code",))
USER_CODE = _json({"user_code": _TEXT}, ("user_code",))
REFRESH_TOKEN = _json({"refresh_token": _TEXT}, ("refresh_token",))
ADMISSION_CHECK = _json({"spec": {"type": "object"}, "profile": _TEXT, "allow_pending": {"type": "boolean"}}, ("spec",))
NEW_USER = _json({"username": _TEXT, "role": {"enum": list(ROLES)}, "email": _TEXT},
                 ("username",))
NEW_TOKEN = _json({"username": _TEXT, "name": _TEXT, "expires_in": _NUMBER}, ("username",))
QUOTA = _json({"username": _TEXT, **{cap.name: cap.json_schema() for cap in QUOTA_FIELDS}}, ("username",))
REGISTER_DATA = _json({"kind": {"enum": ["corpus", "dataset", "volume", "environment", "model"]}, "ref": _TEXT,
                       "path": _TEXT,
                       "visibility": {"enum": ["private", "public"]}, "grants": {"type": "array", "items": _TEXT}},
                      ("kind", "ref", "path"))
FOLLOWUP = _json({"action": {"enum": ["export", "eval"]}, "benchmarks": {"type": "array", "items": _TEXT},
                  "profile": _TEXT}, ("action",))
PLUGIN_PATCH = _json({"enabled": {"type": "boolean"}, "version": _TEXT})
INGEST = _json({"run_id": _TEXT}, ("run_id",))
_SCORE = {"type": "object", "properties": {"benchmark": _TEXT, "metric": _TEXT, "value": _NUMBER}}
EXTERNAL_EVALUATION = _json({"model": _TEXT, "harness": _TEXT, "train_run_id": _TEXT, "note": _TEXT}, ("model",))
EXTERNAL_SCORES = _json({"run_id": _TEXT, "scores": {"type": "array", "items": _SCORE}, "model": _TEXT,
                         "harness": _TEXT}, ("run_id", "scores"))
MAINTENANCE_DRAIN = _json({"note": _TEXT})
SHARE_WEIGHT = _json({"weight": {"type": "number", "exclusiveMinimum": 0}}, ("weight",))
PLUGIN_PACKAGE = {"requestBody": {"required": True, "content": _GZIP}}
DATASET_PUSH = {"requestBody": {"required": True, "content": _GZIP,
                                "description": "a gzip tar of the dataset's files (a single file or a folder)"}}
ASSET_PUSH = {"requestBody": {"required": True, "content": _GZIP,
                              "description": "a gzip tar of the folder's files (a corpus or a model)"}}
SWEEP = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": {"type": "object", "required": ["sweep", "bundle"], "properties": {
        "sweep": _TEXT, "bundle": {"type": "string", "format": "binary"}}}},
}, "description": "a `sweep` JSON part (exp, profile, points, max_parallel) and the experiment's bundle"}}
SUBMISSION = {
    "parameters": [
        {"name": "X-Forge-Meta", "in": "header", "required": False, "schema": _TEXT,
         "description": "the submission envelope as JSON (ISO-8859-1); with an application/gzip bundle body"},
        {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string", "maxLength": 255},
         "description": "a repeated key replays the first answer"},
    ],
    "requestBody": {"required": False, "content": {
        **_GZIP,
        "multipart/form-data": {"schema": {"type": "object", "required": ["spec"], "properties": {
            "spec": _TEXT, "exp": _TEXT, "profile": _TEXT, "bundle": {"type": "string", "format": "binary"}}}},
    }},
}
SERVICE_START = _json({"model": _TEXT, "gpus": {"type": "integer", "minimum": 0, "maximum": 4096},
                       "ttl_hours": {"type": "number", "exclusiveMinimum": 0}, "profile": _TEXT, "name": _TEXT},
                      ("model",))
SERVICE_EXTEND = _json({"hours": {"type": "number", "exclusiveMinimum": 0}})
SERVICE_KEY = _json({"name": _TEXT})
NOTIFY_HOOK = _json({"url": _TEXT, "events": {"type": "array", "items": {"enum": list(EVENTS)}}}, ("url",))
SERVICE_PROXY = {"requestBody": {"required": False, "content": {"application/json": {"schema": {"type": "object"}}},
                                 "description": "the OpenAI API request, passed to the service as it is"}}
PLAYGROUND_START = _json({"model": _TEXT, "gpus": {"type": "integer", "minimum": 0, "maximum": 4096},
                          "ttl_s": {"type": "number", "exclusiveMinimum": 0}}, ("model",))
PLAYGROUND_EXTEND = _json({"extra_s": {"type": "number", "exclusiveMinimum": 0}})
