"""CPU facts: which kernels bfloat16 gets, and when emulated bfloat16 is worth a warning."""

from ucs.utils.cpu import bf16_cpu_warning, native_bf16

ZEN3 = {"family": 25, "model": 1, "kernel_flags": ["avx2", "fma", "f16c"]}
ZEN4 = {"family": 25, "model": 17, "kernel_flags": ["avx2", "fma", "f16c", "avx512f", "avx512_bf16"]}
SAPPHIRE = {"family": 6, "model": 143, "kernel_flags": ["avx2", "avx512f", "amx_tile", "amx_bf16"]}


def test_native_bf16_needs_avx512_bf16_or_amx():
    assert native_bf16(ZEN3) is False
    assert native_bf16(ZEN4) is True and native_bf16(SAPPHIRE) is True
    assert native_bf16({}) is None  # flags unknown (not Linux)


def test_warning_only_for_bfloat16_on_a_cpu_that_emulates_it():
    msg = bf16_cpu_warning("cpu", "bfloat16", ZEN3)
    assert msg and "avx2 fma f16c" in msg and "dtype='float32'" in msg
    assert bf16_cpu_warning("cpu", "bfloat16", ZEN4) is None
    assert bf16_cpu_warning("cpu", "float32", ZEN3) is None
    assert bf16_cpu_warning("cuda:0", "bfloat16", ZEN3) is None
    assert bf16_cpu_warning("cpu", "bfloat16", {}) is None  # unknown: say nothing rather than guess
