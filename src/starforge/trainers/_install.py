"""Install StarForge's reporting into every `transformers.Trainer` of this process (idempotent).

After `install()`, each Trainer built in the process gets one `StarForgeCallback`, and a final `save_model` call (a
script's own call, not a checkpoint's) inside a StarForge job writes to `<FORGE_OUT_DIR>/model` and registers it
as the run's model. Outside a job (no `FORGE_OUT_DIR`) the save goes where the script asked. A run the console
stopped to checkpoint saves no final model. `install()` also handles SIGUSR1 (the console's "checkpoint, then
stop"; call it from the main thread), and the process's first `train()` called without `resume_from_checkpoint`
resumes from `$FORGE_RESUME_FROM` when a later attempt of the job has one.
"""

from __future__ import annotations

import functools
from typing import Any

from ._callback import ReportingState, model_dir, starforge_callback

__all__ = ["install"]

_MARK = "__starforge_installed__"


def install(state: ReportingState | None = None) -> bool:
    """Patch `transformers.Trainer` so every trainer reports to StarForge; return False when it already was."""
    from transformers import Trainer  # type: ignore[import-not-found,unused-ignore]

    if getattr(Trainer, _MARK, False):
        return False
    reporting = state or ReportingState()
    reporting.watch.install()
    original_init = Trainer.__init__
    original_save = Trainer.save_model
    original_train = Trainer.train

    @functools.wraps(original_init)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        if not any(getattr(cb, "reporting", None) is reporting for cb in self.callback_handler.callbacks):
            self.add_callback(starforge_callback(reporting))

    @functools.wraps(original_train)
    def train(self: Any, resume_from_checkpoint: Any = None, *args: Any, **kwargs: Any) -> Any:
        if resume_from_checkpoint is None or resume_from_checkpoint is False:
            resume_from_checkpoint = reporting.resume_from(main=self.is_world_process_zero()) or resume_from_checkpoint
        else:
            reporting.resume_taken = True  # the script chose where to resume: FORGE_RESUME_FROM is not used after
        return original_train(self, resume_from_checkpoint, *args, **kwargs)

    @functools.wraps(original_save)
    def save_model(self: Any, output_dir: str | None = None, _internal_call: bool = False) -> None:
        if not _internal_call and reporting.skips_final_save(main=self.is_world_process_zero()):
            return
        target = model_dir()
        if _internal_call or target is None:
            original_save(self, output_dir, _internal_call)
            return
        original_save(self, str(target), _internal_call)
        reporting.on_model_saved(target, self.state.global_step, main=self.is_world_process_zero())

    Trainer.__init__ = init  # type: ignore[method-assign,unused-ignore]
    Trainer.save_model = save_model  # type: ignore[method-assign,unused-ignore]
    Trainer.train = train  # type: ignore[method-assign,unused-ignore]
    setattr(Trainer, _MARK, True)
    return True
