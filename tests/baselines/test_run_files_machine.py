"""summary.json says what a run was measured on: the host CPU's model name and whether it has AVX-512 (XLA's
CPU code, and so a long training's floats, can differ by it)."""

from baselines.run.files import cpu_model

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9654 96-Core Processor
flags\t\t: fpu sse2 avx2 {extra}
processor\t: 1
model name\t: AMD EPYC 9654 96-Core Processor
"""


def test_model_name_and_avx512(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO.format(extra="avx512f avx512dq"))
    assert cpu_model(path) == "AMD EPYC 9654 96-Core Processor, avx512"


def test_without_avx512_only_the_model(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO.format(extra="avx512_vnni_lookalike"))  # no avx512f flag
    assert cpu_model(path) == "AMD EPYC 9654 96-Core Processor"


def test_no_cpuinfo_is_unknown(tmp_path):
    assert cpu_model(tmp_path / "missing") == "unknown cpu"
    (tmp_path / "empty").write_text("")
    assert cpu_model(tmp_path / "empty") == "unknown cpu"
