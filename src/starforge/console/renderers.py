"""The documents a job can be rendered as (`GET /api/jobs/render?format=`), adapted from the engine side to the
services' `Renderer`: today KubeRay's `RayJob` manifest (`engines.kuberay_manifest`), under `kuberay:` settings."""

from __future__ import annotations

from dataclasses import asdict

from ..contract import JobSpec
from ..engines.kuberay_manifest import RenderJob, RenderRefused, render_rayjob
from .services.context import CannotRender, Renderer, RenderFacts
from .settings import Settings

__all__ = ["renderers"]


def renderers(settings: Settings) -> dict[str, Renderer]:
    """Return the renderers of this console by format name."""

    def kuberay(spec: JobSpec, facts: RenderFacts) -> str:
        try:
            return render_rayjob(spec, RenderJob(**asdict(facts)), settings.kuberay)
        except RenderRefused as exc:
            raise CannotRender(exc.field, exc.message, exc.hint) from exc

    return {"kuberay": kuberay}
