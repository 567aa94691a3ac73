"""`adplace demo` writes a TensorBoard log directory under its trace directory: one run per example with its graph
and traced run, the fit's loss every 10 steps, and prints the `tensorboard --logdir` line to view it."""
import pytest

from adplace import cli, devices

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


@pytest.fixture(autouse=True)
def _no_virtual_gpus(monkeypatch):
    monkeypatch.delenv("ADPLACE_VIRTUAL_GPUS", raising=False)
    monkeypatch.setenv("ADPLACE_PROGRESS", "0")
    devices.set_virtual_gpus(None)
    yield
    devices.set_virtual_gpus(None)


def _run(logdir):
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def test_demo_writes_a_tensorboard_log_directory(capsys, tmp_path):
    assert cli.main(["demo", "--virtual-gpus", "2", "--steps", "30", "--trace", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    logdir = tmp_path / "tensorboard"
    assert f"  tensorboard --logdir {logdir}\n" in out
    assert sorted(p.name for p in logdir.iterdir()) == ["colocate_false", "colocate_true", "polynomial_fit"]
    fit = _run(logdir / "polynomial_fit")
    assert [e.step for e in fit.Scalars("loss")] == [10, 20, 30]
    assert fit.Tags()["graph"] and fit.Tags()["run_metadata"] == ["step 30"]
    devices_seen = {d.device for d in fit.RunMetadata("step 30").step_stats.dev_stats}
    assert any(d.endswith("GPU:0") for d in devices_seen) and any(d.endswith("GPU:1") for d in devices_seen)
    for run in ("colocate_true", "colocate_false"):
        traced = _run(logdir / run)
        assert traced.Tags()["run_metadata"] == ["g + c"]
        assert {"a", "b", "c"} <= {n.name for n in traced.Graph().node}
