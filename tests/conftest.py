import warnings

warnings.filterwarnings("ignore", message="transformer_engine module not found")

import pytest  # noqa: E402

from fusion_alias.fuzz.modules_process import isolated  # noqa: E402


@pytest.fixture(autouse=True)
def _process_settings_isolated():
    """Every test starts from the default process settings the fuzzer's process form changes (its environment
    variables unset, deterministic algorithms off) and gives the process back as it was: a test that runs
    generated ``modules`` programs holding the form left deterministic mode on for every later test."""
    with isolated():
        yield


@pytest.fixture(autouse=True)
def _session46_forms_off(monkeypatch):
    """The seeds the tests pin are their programs as drawn before session 46's fuzz forms (each from a stream of its
    own, default on in fuzz runs: fuzz/einsum_view_forms.py, fuzz/saving_inplace.py); tests of the forms turn them on
    (tests/test_session46_fuzz_forms.py)."""
    from fusion_alias.fuzz import einsum_view_forms, saving_inplace

    monkeypatch.setattr(einsum_view_forms, "P_EINSUM_VIEW", 0.0)
    monkeypatch.setattr(saving_inplace, "P_SAVING_INPLACE", 0.0)
