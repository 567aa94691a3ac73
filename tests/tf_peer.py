"""Real TensorFlow for the interop tests, always in a subprocess (never imported into the test process): `needs_tf`
skips a test where TensorFlow is not installed (`pip install ".[interop]"`); `run_peer` runs a peer script and
returns the last line it printed."""
import importlib.util
import os
import subprocess
import sys

import pytest

needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                              reason='TensorFlow is not installed (pip install ".[interop]")')


def run_peer(script, *args, timeout: int = 300) -> str:
    """Run `python script *args` with TF quiet and on the CPU; the last line of its output ("" for none)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else ""
