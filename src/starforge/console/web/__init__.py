"""The web console (issue [7]): pages rendered on the server from the same services as the API, its own static
files, browser sessions with CSRF tokens, SVG metric charts and the offline API reference. No HTTP here: the thin
router is `console.api.routers.web`."""

from __future__ import annotations

from .actions import (
    approve_device,
    deny_device,
    pause_job,
    resume_job,
    retry_job,
    review_device,
    set_disabled,
    set_role,
    stop_job,
)
from .admin_pages import admin_page
from .apidocs import api_docs_page
from .assets import Asset, asset
from .pages import (
    device_page,
    device_review_page,
    error_page,
    job_live,
    job_page,
    jobs_live,
    jobs_page,
    quota_page,
    recipes_page,
    rejections_page,
    signin_page,
)
from .sessions import (
    COOKIE,
    SECURE_COOKIE,
    Arrival,
    SignedIn,
    WebCaller,
    check_csrf,
    cookie_name,
    csrf_token,
    local_path,
    sign_in,
    sign_out,
)

__all__ = [
    "COOKIE",
    "SECURE_COOKIE",
    "Arrival",
    "Asset",
    "SignedIn",
    "WebCaller",
    "admin_page",
    "api_docs_page",
    "approve_device",
    "asset",
    "check_csrf",
    "cookie_name",
    "csrf_token",
    "deny_device",
    "device_page",
    "device_review_page",
    "error_page",
    "job_live",
    "job_page",
    "jobs_live",
    "jobs_page",
    "local_path",
    "pause_job",
    "quota_page",
    "recipes_page",
    "rejections_page",
    "resume_job",
    "retry_job",
    "review_device",
    "set_disabled",
    "set_role",
    "sign_in",
    "sign_out",
    "signin_page",
    "stop_job",
]
