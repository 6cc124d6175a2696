"""One local Ray for a test module (tests/test_ray_executor.py, tests/test_construct_ray.py): its
workers import the tests' own modules (fakes, build_toy, neptune_example) and share a fresh lvu
cache dir with the driver."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def local_ray(ray, cache_dir: Path) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "LVU_CACHE_DIR")}
    os.environ["RAY_AUTH_MODE"] = "disabled"  # no token file in the home directory
    os.environ["LVU_CACHE_DIR"] = str(cache_dir)
    paths = os.pathsep.join([str(HERE), *sys.path])
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING",
             runtime_env={"env_vars": {"PYTHONPATH": paths}})
    try:
        yield
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
