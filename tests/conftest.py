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
