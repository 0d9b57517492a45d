"""The machine a manifest records: enough to tell apart CPUs that share a model name."""

import sys

import pytest

from ucs.evaluation.manifest import platform_info
from ucs.utils.cpu import KERNEL_FLAGS, cpu_details, describe_machine

ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu sse2 avx fma f16c avx2 bmi2

processor\t: 1
cpu family\t: 25
model\t\t: 17
flags\t\t: avx2 avx512f avx512_bf16
"""


def test_cpu_details_reads_the_first_processor_and_its_kernel_flags(tmp_path):
    f = tmp_path / "cpuinfo"
    f.write_text(ZEN3)
    assert cpu_details(f) == {
        "family": 25,
        "model": 1,
        "stepping": 1,
        "kernel_flags": ["avx2", "fma", "f16c"],
    }


def test_cpu_details_tells_avx512_bf16_machines_apart(tmp_path):
    f = tmp_path / "cpuinfo"
    f.write_text(ZEN3.replace("model\t\t: 1\n", "model\t\t: 17\n", 1).replace("bmi2", "avx512f avx512_bf16"))
    d = cpu_details(f)
    assert d["model"] == 17 and "avx512_bf16" in d["kernel_flags"] and "avx512f" in d["kernel_flags"]


def test_cpu_details_without_cpuinfo_is_empty(tmp_path):
    assert cpu_details(tmp_path / "absent") == {}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/cpuinfo")
def test_platform_info_records_this_machines_details():
    info = platform_info()
    d = info["cpu_details"]
    assert set(d["kernel_flags"]) <= set(KERNEL_FLAGS) and isinstance(d.get("family", 0), int)


def test_machine_line_names_ids_and_flags():
    p = {
        "cpu": "AMD EPYC",
        "cpu_count": 2,
        "cpu_details": {"family": 25, "model": 1, "kernel_flags": ["avx2"]},
    }
    assert describe_machine(p) == "AMD EPYC × 2 (family 25 model 1; kernel flags avx2)"
    assert describe_machine({"cpu": "X", "cpu_count": 2, "cpu_details": {"kernel_flags": []}}).endswith(
        "(kernel flags none)"
    )
    assert describe_machine({"cpu": "X", "cpu_count": 2}) == "X × 2 (no CPU details recorded)"
