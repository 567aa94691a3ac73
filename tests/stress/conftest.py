"""Stress fixtures: how many steps to run, and a seed that replays a run's random choices.

    ADPLACE_STRESS=10 pytest tests/stress        # ten times as many steps (default 1: about a minute on 2 cores)
    ADPLACE_STRESS_SEED=1234 pytest tests/stress  # replay the random choices of a failed run (its message names the seed)

Thread interleavings are not reproducible, so a seed replays the choices (which steps fail, the Ctrl-C gaps), not the
schedule; the counts asserted are exact whatever the schedule.
"""
import os
import random

import pytest


@pytest.fixture
def stress_scale() -> int:
    """How many times the default number of steps to run: env ADPLACE_STRESS (an integer >= 1, default 1)."""
    text = os.environ.get("ADPLACE_STRESS", "").strip()
    return max(1, int(text)) if text else 1


@pytest.fixture
def stress_seed() -> int:
    """The seed of this test's random choices: ADPLACE_STRESS_SEED, or a fresh one (printed, and named in messages)."""
    text = os.environ.get("ADPLACE_STRESS_SEED", "").strip()
    seed = int(text) if text else random.randrange(2**32)
    print(f"stress seed: ADPLACE_STRESS_SEED={seed}")
    return seed

