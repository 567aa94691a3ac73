"""`adplace demo --cluster`: it starts a local Ray cluster of its own, trains between-graph on 1 ps + 2 workers,
reports steps, loss and the bytes a step moves between tasks, writes a traced step, and stops what it started."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_cluster_demo_trains_reports_and_stops_its_cluster(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ADPLACE_RAY_ADDRESS"}  # its own nodes, not the tests'
    result = subprocess.run([sys.executable, "-m", "adplace.cli", "demo", "--cluster", "--steps", "40", "--trace",
                             str(tmp_path)], capture_output=True, text=True, timeout=240, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "Ray cluster: 2 local node(s) on 127.0.0.1" in result.stdout
    for worker in (0, 1):
        losses = [float(line.split("loss")[1]) for line in lines if line.startswith(f"worker {worker} ")]
        assert len(losses) == 5 and losses[-1] < losses[0] / 10  # both workers trained the shared w
    global_steps = int(next(line for line in lines if " steps in " in line).split()[0])
    assert 40 < global_steps <= 80  # both workers' steps (asynchronous increments may overlap, as in TF)
    assert "bytes /job:ps/replica:0/task:0 -> /job:worker/replica:0/task:0" in result.stdout
    trace = json.loads((tmp_path / "cluster_step.json").read_text())
    assert any(e.get("args", {}).get("name", "").startswith("/job:ps/replica:0/task:0/device:CPU:0")
               for e in trace["traceEvents"])
    assert lines[-1] == "cluster stopped"
