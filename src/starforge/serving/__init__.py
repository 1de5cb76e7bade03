"""The job side of an inference service (standard library only): start an OpenAI-compatible server on the job's
own loopback, bridge it to the Unix socket `<out>/.service/openai.sock`, and say `ready.json` once it answers.

    python -m starforge.serving            (run by the serving recipes; reads the job's FORGE_* environment)
"""

from .plan import ServerPlan, plan_from_env, render_plan

__all__ = ["READY_FILE", "SERVICE_DIR", "SOCKET_FILE", "ServerPlan", "plan_from_env", "render_plan"]

SERVICE_DIR = ".service"  # in the job's output folder; the console's proxy reaches the service only here
SOCKET_FILE = "openai.sock"
READY_FILE = "ready.json"
