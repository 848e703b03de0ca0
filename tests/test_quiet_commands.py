"""hogen's own commands print hogen's output only: no TensorFlow start-up or tracing logs.

TensorFlow logs through C++ (absl: "All log messages before absl::InitializeLog()", the
CPU-feature and oneDNN notices) and through Python's logging (retracing warnings). `hogen
verify` keeps both out unless the user asked for them with TF_CPP_MIN_LOG_LEVEL.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOGEN = Path(sys.executable).parent / "hogen"
NOISE = ("absl", "cpu_feature_guard", "oneDNN", "WARNING:tensorflow", "I0000", "W0000")


def test_verify_prints_no_tensorflow_log_line():
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env.setdefault("HOGEN_CACHE", str(REPO / ".hogen-cache"))
    result = subprocess.run(
        [str(HOGEN), "verify", "specs/log1pexp.yaml", "--samples", "64"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert "log1pexp" in result.stdout and "worst path" in result.stdout
    assert not [line for line in output.splitlines() if any(n in line for n in NOISE)], output
