"""benchmarks/scale.py runs end to end on tiny workloads and ends with the line issue 15 asks for."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "scale.py"
LAST_LINE = re.compile(
    r"cpu_ratio=\d+\.\d+ cached_ratio=\d+\.\d+ recorded_time_ratio=\d+\.\d+ recorded_mem_ratio=\d+\.\d+"
    r" calibration_100k_s=\d+\.\d+ wall_over_floor=\d+\.\d+"
)


def test_scale_benchmark_quick_prints_the_ratios_line_last() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert LAST_LINE.fullmatch(done.stdout.splitlines()[-1]), done.stdout[-2000:]
