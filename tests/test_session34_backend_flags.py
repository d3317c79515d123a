"""Session 34: ``torch.backends`` flags read inside the compiled function, changed between calls.

A flag torch answers through a getter of ``torch._C`` called from Python code the interpreter runs
(``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cuda.flash_sdp_enabled()``,
``torch.backends.mkldnn.matmul.fp32_precision``, ``torch._C._get_cudnn_deterministic()``, ...) kept the first
call's answer in the cached program, silently (plain ``thunder.jit`` too): process_state.py, Note [backend flags
read through torch._C]. The flags that are properties of the module (``torch.backends.cudnn.deterministic``,
``torch.backends.mha.get_fastpath_enabled()``) were right before and are kept here as a check. Each case
compares eager and the compiled function on fresh inputs (the output and the written input) at every call,
under both schedules, with the flag flipped between calls, and restores the flag."""

import pytest
import torch

import fusion_alias

B = torch.backends
SCHEDULES = ("reads-first", "writes-first")


def _attr(obj, name):
    return (lambda: getattr(obj, name)), (lambda v: setattr(obj, name, v))


FLAGS = {  # name -> (read inside the function, (get, set) outside, two values)
    "cuda.matmul.allow_tf32": (lambda: B.cuda.matmul.allow_tf32, _attr(B.cuda.matmul, "allow_tf32"), (False, True)),
    "cuda.matmul.allow_fp16_reduced": (lambda: B.cuda.matmul.allow_fp16_reduced_precision_reduction,
                                       _attr(B.cuda.matmul, "allow_fp16_reduced_precision_reduction"), (True, False)),
    "cuda.flash_sdp_enabled": (lambda: B.cuda.flash_sdp_enabled(),
                               (B.cuda.flash_sdp_enabled, B.cuda.enable_flash_sdp), (True, False)),
    "cuda.math_sdp_enabled": (lambda: B.cuda.math_sdp_enabled(),
                              (B.cuda.math_sdp_enabled, B.cuda.enable_math_sdp), (True, False)),
    "mkldnn.matmul.fp32_precision": (lambda: B.mkldnn.matmul.fp32_precision == "none",
                                     _attr(B.mkldnn.matmul, "fp32_precision"), ("none", "bf16")),
    "cudnn.conv.fp32_precision": (lambda: B.cudnn.conv.fp32_precision == "none",
                                  _attr(B.cudnn.conv, "fp32_precision"), ("none", "tf32")),
    "C._get_cudnn_deterministic": (lambda: torch._C._get_cudnn_deterministic(),
                                   (torch._C._get_cudnn_deterministic, torch._C._set_cudnn_deterministic),
                                   (False, True)),
    "C._get_mkldnn_enabled": (lambda: torch._C._get_mkldnn_enabled(),
                              (torch._C._get_mkldnn_enabled, torch._C._set_mkldnn_enabled), (True, False)),
    # right before: Thunder's prologue reads a module's property again at every call
    "cudnn.deterministic": (lambda: B.cudnn.deterministic, _attr(B.cudnn, "deterministic"), (False, True)),
    "mha.get_fastpath_enabled": (lambda: B.mha.get_fastpath_enabled(),
                                 (B.mha.get_fastpath_enabled, B.mha.set_fastpath_enabled), (True, False)),
}


def _branches(read):
    def fn(x):
        return x * 2 if read() else x * 3
    return fn


def _writes(read):
    def fn(x):
        y = x[0]
        x.add_(1)
        y.mul_(2 if read() else 3)
        return x.sum()
    return fn


@pytest.fixture(params=list(FLAGS))
def flag(request):
    read, (get, set_), values = FLAGS[request.param]
    before = get()
    set_(values[0])
    yield read, set_, values
    set_(before)


def _matches_eager_at_each_call(fn, set_, values, jitted):
    for v in values + values[::-1] + values:
        set_(v)
        x_e, x_j = torch.arange(4.0).reshape(2, 2), torch.arange(4.0).reshape(2, 2)
        expected, got = fn(x_e), jitted(x_j)
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        torch.testing.assert_close(x_j, x_e, rtol=0, atol=0)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("make", [_branches, _writes], ids=["branch", "writes"])
def test_a_backend_flag_changed_between_calls(flag, make, schedule):
    read, set_, values = flag
    fn = make(read)
    _matches_eager_at_each_call(fn, set_, values, fusion_alias.jit(fn, backend="reference", schedule=schedule))


def test_an_unchanged_flag_compiles_once():
    fn = _branches(lambda: B.cuda.matmul.allow_tf32)
    jitted = fusion_alias.jit(fn, backend="reference")
    for _ in range(4):
        torch.testing.assert_close(jitted(torch.ones(2)), fn(torch.ones(2)))
    assert jitted.compiled_structures == 1


def test_two_flags_and_the_arguments_of_a_getter():
    before = (B.mkldnn.matmul.fp32_precision, B.cudnn.conv.fp32_precision)

    def fn(x):
        scale = 2 if B.mkldnn.matmul.fp32_precision == "bf16" else 3
        return x * scale + (1 if B.cudnn.conv.fp32_precision == "tf32" else 0)

    jitted = fusion_alias.jit(fn, backend="reference")
    try:
        for m, c in (("none", "none"), ("bf16", "none"), ("none", "tf32"), ("bf16", "tf32"), ("none", "none")):
            B.mkldnn.matmul.fp32_precision, B.cudnn.conv.fp32_precision = m, c
            torch.testing.assert_close(jitted(torch.ones(2)), fn(torch.ones(2)), rtol=0, atol=0)
    finally:
        B.mkldnn.matmul.fp32_precision, B.cudnn.conv.fp32_precision = before
