"""Counts read as English: `1 file`, `2 files`, and a CPU series' job takes CPU slots, not GPUs."""

from __future__ import annotations

from starforge.cli._output import counted, slots


def test_counts_are_pluralised() -> None:
    assert [counted(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert counted(1, "finished job") == "1 finished job" and counted(None, "file") == "? files"


def test_a_job_on_a_cpu_series_takes_cpu_slots() -> None:
    assert [slots(n, cpu=True) for n in (1, 2)] == ["1 CPU slot", "2 CPU slots"]
    assert [slots(n, cpu=False) for n in (1, 8)] == ["1 GPU", "8 GPUs"]
