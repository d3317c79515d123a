"""The error fusion_alias raises for a program it refuses (see ``fusion_alias.refusals``)."""


class AliasInputError(RuntimeError):
    """A program eager PyTorch rejects (e.g. an in-place write into an expanded tensor)."""


def default_dtype_error(dtype) -> NotImplementedError:
    """Note [a default dtype other than float32]: Thunder 0.2.6 traces with float32 as the default dtype whatever
    ``torch.set_default_dtype`` says, so under float64 ``int_x * 1.5`` (float64 in eager) and ``torch.zeros(3)``
    came back float32, silently (plain ``thunder.jit`` too; session 27 hand probe). ``fusion_alias.jit`` refuses a
    call made with another default, at every call (the default may change between calls of one compiled
    function)."""
    return NotImplementedError(
        f"fusion_alias.jit: the default dtype is {dtype} (torch.set_default_dtype): not supported, Thunder 0.2.6 "
        "computes with float32 as the default and would return other dtypes than eager. Call with the default "
        "float32, or give dtypes explicitly and reset the default around the call")


class OutArgumentError(NotImplementedError):
    """An ``out=`` argument fusion_alias cannot trace as eager runs it (out_arguments.py)."""


def out_refusal(name: str) -> OutArgumentError:
    """The refusal of ``torch.<name>(..., out=o)`` for a function whose ``out`` fusion_alias does not trace
    (out_arguments.py, Note [out= of other functions])."""
    return OutArgumentError(
        f"fusion_alias: torch.{name}(..., out=o) is not supported: Thunder 0.2.6 traces torch.{name} without "
        f"out=, and eager's rules for an out that overlaps an input differ by function. "
        f"Workaround: o.copy_(torch.{name}(...))")
