"""`sf status`: who you are, your quota and usage, your active jobs, the cluster's capacity and its profiles."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from starforge.cli._output import Output

if TYPE_CHECKING:
    from starforge.client import ClusterStatus, Job, Usage

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Identity, quota and usage, active jobs, cluster capacity, profiles.",
)


def _amount(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _of(used: Any, cap: float | None, unit: str = "") -> str:
    used_text = f"{_amount(used):g}{unit}"
    return f"{used_text} of {f'{cap:g}{unit}' if cap else 'unlimited'}"


def _bytes(count: float) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


def _series_rows(cluster: ClusterStatus) -> list[list[Any]]:
    if cluster.series:
        return [[s.get("label") or s.get("id") or "?", s.get("total", 0), s.get("used", 0), s.get("free", 0),
                 s.get("blocked", 0), s.get("queued", 0)] for s in cluster.series]
    accel = cluster.raw.get("gpu", {}).get("accel") if isinstance(cluster.raw.get("gpu"), dict) else None
    label = ", ".join(str(a) for a in accel) if isinstance(accel, list) and accel else "all"
    return [[label, cluster.total, cluster.used, cluster.free, cluster.blocked, cluster.queued]]


def _report(server: str, user: dict[str, Any], usage: Usage, jobs: list[Job], cluster: ClusterStatus) -> dict[str, Any]:
    return {
        "server": server,
        "user": user,
        "quota": dict(usage.quota),
        "usage": {k: v for k, v in usage.usage.items() if k != "running"},
        "active_jobs": [dict(j.raw) for j in jobs],
        "cluster": {"total": cluster.total, "used": cluster.used, "free": cluster.free, "blocked": cluster.blocked,
                    "queued": cluster.queued, "series": [dict(s) for s in cluster.series],
                    "active_count": cluster.active_count},
        "profiles": [{"name": p.name, "series": p.series or p.name, "num_nodes": p.num_nodes,
                      "gpus_per_node": p.gpus_per_node, "label": p.label} for p in cluster.profiles],
    }


def _human(out: Output, report: dict[str, Any], usage: Usage, jobs: list[Job], cluster: ClusterStatus) -> str:
    from starforge.cli.cmd_job import jobs_table, render_table

    user = report["user"]
    used = usage.usage
    extra = ", ".join(v for v in (user.get("role"), user.get("email")) if v)
    measured = _amount(used.get("storage_measured_at"))
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(measured)) if measured else "never measured"
    storage_cap = usage.cap("max_storage_gb")
    lines = [
        f"{user.get('username') or '?'}" + (f" ({extra})" if extra else "") + f" on {report['server']}",
        "",
        "Quota and usage",
        f"  GPUs       {_of(used.get('active_gpus'), usage.cap('max_concurrent_gpus'))} in use",
        f"  Jobs       {_of(used.get('active_jobs'), usage.cap('max_concurrent_jobs'))} active",
        f"  GPU hours  {_of(round(_amount(used.get('gpu_hours_today')), 2), usage.cap('daily_gpu_hours'))} today,"
        f" {_amount(used.get('gpu_hours_total')):.1f} in total",
        f"  Storage    {_bytes(_amount(used.get('storage_bytes')))} of "
        f"{f'{storage_cap:g} GB' if storage_cap else 'unlimited'} ({when})",
        "",
        "Active jobs",
        _indent(jobs_table(out, jobs)) if jobs else "  none",
        "",
        "Cluster capacity",
        _indent(render_table(out, ["series", "total", "used", "free", "blocked", "queued"], _series_rows(cluster))),
        "",
        "Profiles",
    ]
    if cluster.profiles:
        rows = [[p.name, p.series or p.name, f"{p.num_nodes}x{p.gpus_per_node}", p.num_nodes * p.gpus_per_node,
                 p.label] for p in cluster.profiles]
        lines.append(_indent(render_table(out, ["name", "series", "shape", "gpus", "label"], rows)))
    else:
        lines.append("  none published")
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else line for line in text.splitlines())


@app.command()
def status(as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False) -> None:
    """Show your account, quota and usage, active jobs, cluster capacity per series and the hardware profiles."""
    from starforge.cli.cmd_job import console_session

    out = Output(as_json=as_json)
    with console_session(out) as console:
        user = console.whoami()
        usage = console.usage()
        jobs = [j for j in console.jobs(all=True) if not j.terminal]
        cluster = console.cluster_status()
    report = _report(console.server, dict(user.raw) or {"username": user.username}, usage, jobs, cluster)
    out.emit(report, lambda _: _human(out, report, usage, jobs, cluster))
