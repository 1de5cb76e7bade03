"""The job sandbox's pieces: bubblewrap's options, the job's view, limits, cgroup files and the configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.console.settings import SettingsError, load_settings
from starforge.engines.identities import UidPool, check_range, reclaim_tree
from starforge.engines.isolation import Isolation, IsolationConfig
from starforge.engines.limits import CgroupV2, JobLimits, rlimit_command
from starforge.engines.sandbox import View, bwrap_command, gpu_device_nodes


def _options(view: View, uid: int | None = None) -> tuple[list[str], list[str]]:
    return bwrap_command(view, ["forge-launch", "--workdir", "/forge/runs/a/e/r/work"], uid=uid)


def test_the_job_sees_its_folders_read_write_and_its_inputs_read_only(tmp_path: Path) -> None:
    run = tmp_path / "state" / "runs" / "alice" / "exp" / "r-0123456789"
    view = View(cwd="/forge/runs/alice/exp/r-0123456789/work",
                rw=((run / "out", "/forge/runs/alice/exp/r-0123456789/out"),),
                ro=((tmp_path / "corpus", "/forge/inputs/corpus"),), tmp=run / "tmp")
    options, command = _options(view)
    text = " ".join(options)
    assert f"--bind {run / 'out'} /forge/runs/alice/exp/r-0123456789/out" in text
    assert f"--ro-bind {tmp_path / 'corpus'} /forge/inputs/corpus" in text
    assert f"--bind {run / 'tmp'} /tmp" in text
    for namespace in ("--unshare-pid", "--unshare-ipc", "--unshare-user", "--proc", "--dev"):
        assert namespace in options
    assert "--die-with-parent" not in options  # jobs outlive a console restart
    assert str(tmp_path) not in " ".join(command)  # only the options (passed by descriptor) name host paths


def test_a_per_job_uid_drops_every_privilege_after_mounting() -> None:
    options, command = _options(View(cwd="/"), uid=61200)
    assert "--unshare-user" not in options
    assert command[:2] == ["setpriv", "--reuid=61200"]
    for flag in ("--regid=61200", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"):
        assert flag in command


def test_only_the_assigned_gpus_are_visible() -> None:
    assert gpu_device_nodes([]) == ()
    nodes = gpu_device_nodes([1, 3])
    assert nodes[:2] == ("/dev/nvidia1", "/dev/nvidia3")
    assert "/dev/nvidia0" not in nodes and "/dev/nvidia2" not in nodes
    options, _ = _options(View(cwd="/", devices=nodes))
    assert options.count("--dev-bind") == len(nodes)


def test_job_paths_mirror_the_run_under_the_sandbox_root(tmp_path: Path) -> None:
    iso = Isolation(tmp_path, IsolationConfig(sandbox=True))
    paths = iso.job_paths(tmp_path / "runs" / "bob" / "exp" / "r-0000000001")
    assert paths.out == "/forge/runs/bob/exp/r-0000000001/out"
    assert paths.place("corpus", tmp_path / "c").target == "/forge/inputs/corpus"
    off = Isolation.none(tmp_path).job_paths(tmp_path / "runs" / "bob" / "exp" / "r-1")
    assert off.out == str(tmp_path / "runs" / "bob" / "exp" / "r-1" / "out") and off.inputs is None


def test_a_job_runtime_never_shows_the_state_folder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    iso = Isolation(state, IsolationConfig(sandbox=True))
    run = state / "runs" / "bob" / "exp" / "r-0000000001"
    venv = tmp_path / "cache" / "venv"
    # a venv's sys.path may name any folder (a `.pth` file): the state folder, a folder holding it, one inside it
    view = iso.view(run, iso.job_paths(run), "/forge/w", (), (), job_runtime=(venv, state, tmp_path, state / "runs"))
    assert [source for source, _ in view.ro] == [venv]


def test_limits_scale_with_slots_and_fall_back_to_rlimits_and_affinity() -> None:
    iso = Isolation(Path("/x"), IsolationConfig(), memory_per_slot=1 << 30, cpus_per_slot=2.0)
    limits = iso.limits_for(3, (0, 1), 60.0)
    assert (limits.memory_bytes, limits.cpus, limits.cores, limits.wall_seconds) == (3 << 30, 6.0, (0, 1), 60.0)
    assert JobLimits.from_dict(limits.to_dict()) == limits
    prefix = rlimit_command(limits, per_job_uid=True)
    assert f"--as={2 * (3 << 30)}" in prefix and "--nproc=4096" in prefix
    assert prefix[-3:] == ["taskset", "--cpu-list", "0,1"]
    assert "--nproc=4096" not in rlimit_command(limits, per_job_uid=False)  # a shared uid: not ours to cap


def test_a_delegated_cgroup_gets_the_job_limits(tmp_path: Path) -> None:
    path = CgroupV2(tmp_path).create("r-0123456789", JobLimits(memory_bytes=1 << 30, cpus=1.5))
    assert (path / "memory.max").read_text() == f"{1 << 30}\n"
    assert (path / "cpu.max").read_text() == "150000 100000\n"
    assert not CgroupV2.oom_killed(path)
    (path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert CgroupV2.oom_killed(path)


def test_uid_ranges_must_be_unprivileged_and_jobs_never_get_an_accounts_uid() -> None:
    assert "unprivileged" in check_range(0, 100)
    import pwd

    account = max(pwd.getpwall(), key=lambda p: p.pw_uid if p.pw_uid < 65534 else 0)
    if account.pw_uid < 1000:
        pytest.skip("this machine has no unprivileged account to test with")
    assert account.pw_name in check_range(account.pw_uid, account.pw_uid)
    assert check_range(account.pw_uid, account.pw_uid + 1) == ""
    assert UidPool(account.pw_uid, account.pw_uid + 1).take() == account.pw_uid + 1  # the account's uid is skipped
    pool = UidPool(65500, 65502)  # the top of the default range: jobs of other tests take uids from its bottom
    first, second = pool.take(), pool.take()
    assert first != second
    pool.release(first)
    assert pool.take() == first


def test_finished_job_files_come_back_readable_and_without_set_id_bits(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir(mode=0o700)
    secret = tmp_path / "ckpt" / "weights.npz"
    secret.write_bytes(b"w")
    secret.chmod(0o4700)
    (tmp_path / "link").symlink_to("/etc/passwd")
    reclaim_tree(tmp_path)
    assert oct(secret.stat().st_mode & 0o7777) == "0o755"
    assert oct((tmp_path / "ckpt").stat().st_mode & 0o777) == "0o755"
    assert (tmp_path / "link").is_symlink()


def _settings(tmp_path: Path, text: str) -> object:
    config = tmp_path / "console.yaml"
    config.write_text(text)
    return load_settings(config, state_dir=tmp_path / "state")


def test_the_local_executor_configuration(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "executors:\n  local:\n    sandbox: off\n    memory_per_slot: 4GiB\n"
                                   "    cpus_per_slot: 0.5\n    uid_range: [70000, 70999]\nport: 9123\n")
    local = settings.local  # type: ignore[attr-defined]
    assert (local.sandbox, local.memory_per_slot, local.cpus_per_slot, local.uid_range) == (
        False, 4 << 30, 0.5, (70000, 70999))
    assert settings.port == 9123  # type: ignore[attr-defined]
    assert _settings(tmp_path, "{}").local.sandbox is True  # type: ignore[attr-defined]
    for bad in ("executors: {local: {sandbox: maybe}}", "executors: {local: {memory: 1}}",
                "executors: {local: {memory_per_slot: lots}}", "executors: {slurm: {}}", "port: 70000"):
        with pytest.raises(SettingsError):
            _settings(tmp_path, bad)
