"""`import hivex_jax` (and `hivex_jax.interop`) must not import any optional library."""

import subprocess
import sys

import pytest


def test_import_hivex_jax_imports_no_optional_library():
    code = (
        "import sys, hivex_jax, hivex_jax.interop\n"
        "heavy = [m for m in ('gymnasium', 'pettingzoo', 'jaxmarl', 'torch') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import hivex_jax pulled in {out.stdout.strip()}"


def test_lazy_names_resolve_to_the_adapters():
    pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install 'hivex-jax[interop]')")
    import hivex_jax.interop as interop
    from hivex_jax.interop.gymnasium import HivexVectorEnv

    assert interop.HivexVectorEnv is HivexVectorEnv
    with pytest.raises(AttributeError):
        interop.NoSuchAdapter  # noqa: B018
