"""Session 46 (helper-74): fuzz findings with fresh seeds, each pinned here.

1. ``scripts/check_nvfuser_definitions.sh --only fuzz --fuzz 20`` reported fuzz seed 0 #4 ``KeyError: 'n0'`` and #13
   ``TypeError: torch._foreach_mul: expected a list of tensors, got NoneType`` as "raised on the reference backend".
   Eager raises the same for the programs as the check ran them (torch 2.9.1 and 2.10, checked): the check called
   ``make_inputs`` but never ``install_hidden``, so the program read a missing option key and a ``None`` global.
   Not a fusion_alias bug; the check installs the hidden values now (nvfuser_check._fuzz_args). With them installed
   eager runs both; #4 gets fusion_alias's refusal (it is a MUST_REFUSE program), #13 builds its regions.
"""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


def _eager_and_jitted(fn, make, schedule):
    want_args = make()
    want = fn(*want_args)
    got_args = make()
    got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(*got_args)
    return want, want_args, got, got_args


@pytest.mark.parametrize("index", [4, 13])
def test_nvfuser_check_installs_the_hidden_values_of_fuzz_programs(index):
    from fusion_alias import nvfuser_check

    [(name, fn, make_args)] = nvfuser_check.fuzz_programs(index + 1, 0)[index:]
    args = make_args()
    fn(*args)  # eager runs it: the hidden global / option entry is there
    records, error = nvfuser_check.collect_regions(name, fn, make_args())
    if index == 4:  # changes a number kept in a dict that outlives the call: fusion_alias's refusal
        assert error is not None and "Python number" in error
    else:
        assert error is None and records
