"""pytest plugin: run Thunder 0.2.6's own alias tests through fusion_alias.

Load it with ``-p fusion_alias.peer_plugin`` and point pytest at the installed
``thunder/tests/test_update_aliases.py`` and ``thunder/tests/test_inplace_copy.py``
(``scripts/peer_suite.sh`` does both). Nothing of Thunder's test code is copied.

How the redirection works: the one seam is ``thunder.jit``. Every program these
two files compile reaches it, either through the test framework
(``TestExecutor.make_callable`` calls ``thunder.jit(fn, executors=self.executors_list(), **kw)``,
looking ``thunder.jit`` up at call time), directly (``thunder.jit(foo, executors=...)``)
or through ``thunderfx`` (whose compiler does ``from thunder import jit`` when it
compiles a graph). Patching the framework's executor objects instead would miss the
last two. So, while (and only while) a test item of the two peer files runs,
``thunder.jit`` is replaced by a shim that sends

    thunder.jit(fn, executors=<torch executor list or None>, **kw)

to ``fusion_alias.jit(fn, backend="reference", schedule=<--fusion-alias-schedule>, **kw)``,
dropping ``executors`` (fusion_alias always uses ``[fusion_alias.executor]`` and Thunder
appends torch and python) and a caller's ``skip_inplace_alias_updates`` (fusion_alias
always sets it). Other options (``disable_inplace_copy_check``, ``transforms``, ...)
are passed on. thunderfx's per-graph calls (``fn`` a ``torch.fx.GraphModule``) instead get
the real ``thunder.jit(fn, executors=[fusion_alias.executor], **kw)``: thunderfx's splitter
needs thunder.jit's own result, an ``nn.Module``, which ``fusion_alias.jit`` does not return.
Calls that name another executor (nvFuser, torch.compile) or already
name ``fusion_alias.executor`` (fusion_alias's own ``thunder.jit`` call) go to the
real ``thunder.jit`` untouched; the shim is not recursive.

Collection: in the peer files only the tests instantiated for Thunder's
``TorchExecutor`` on CPU (names containing ``_torch_cpu_``) are kept; the rest
(``torchcompile`` variants; nvFuser/CUDA variants, which are not instantiated on a
CPU machine anyway) are deselected. Items of other files are left alone.

Options:
  --fusion-alias-schedule {reads-first,writes-first}   reference schedule (default reads-first)
  --fusion-alias-off                                   keep the filtering, skip the redirection
                                                       (plain Thunder baseline with the same selection)
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

PEER_FILES = ("test_update_aliases.py", "test_inplace_copy.py")
KEEP_MARK = "_torch_cpu_"

# Statistics for the session (how many thunder.jit calls went where).
stats = {"redirected": 0, "via_executor": 0, "passed_through": 0, "fusion_passes": 0, "regions": 0}
# Peer items during which fusion_alias's fusion pass formed no region (nothing of ours ran).
no_region_items: list[str] = []


def pytest_addoption(parser):
    group = parser.getgroup("fusion_alias peer suite")
    group.addoption(
        "--fusion-alias-schedule",
        default="reads-first",
        choices=("reads-first", "writes-first"),
        help="reference-backend schedule used for the redirected thunder.jit calls",
    )
    group.addoption(
        "--fusion-alias-off",
        action="store_true",
        default=False,
        help="do not redirect thunder.jit (plain Thunder on the same selection)",
    )


def is_peer_item(item) -> bool:
    path = Path(str(getattr(item, "path", item.fspath)))
    return path.name in PEER_FILES and path.parent.name == "tests" and path.parent.parent.name == "thunder"


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        if is_peer_item(item) and KEEP_MARK not in item.name:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _is_torch_only(executors) -> bool:
    """True for ``None`` or a list made of Thunder's torch/python executors only."""
    if executors is None:
        return True
    from thunder.extend import get_executor

    names = []
    for ex in executors:
        if isinstance(ex, str):
            ex = get_executor(ex)
        names.append(getattr(ex, "name", None))
    return all(n in ("torch", "python") for n in names)


def _is_fx_graph(fn) -> bool:
    import torch.fx

    return isinstance(fn, torch.fx.GraphModule)


def make_shim(real_jit, schedule: str):
    import fusion_alias

    @functools.wraps(real_jit)
    def jit(fn, /, *, executors=None, **kwargs):
        if executors is not None and any(ex is fusion_alias.executor or ex == "fusion_alias" for ex in executors):
            stats["passed_through"] += 1
            return real_jit(fn, executors=executors, **kwargs)
        if not _is_torch_only(executors):
            stats["passed_through"] += 1
            return real_jit(fn, executors=executors, **kwargs)
        if _is_fx_graph(fn):
            # thunderfx compiling one split of the graph: its splitter needs thunder.jit's
            # own result (a ThunderModule), so use fusion_alias as an executor directly.
            stats["via_executor"] += 1
            return real_jit(fn, executors=[fusion_alias.executor], **kwargs)
        kwargs.pop("skip_inplace_alias_updates", None)
        stats["redirected"] += 1
        return fusion_alias.jit(fn, backend="reference", schedule=schedule, **kwargs)

    jit.__fusion_alias_shim__ = True
    return jit


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if item.config.getoption("--fusion-alias-off") or not is_peer_item(item):
        yield
        return
    import thunder
    import fusion_alias

    ex = fusion_alias.executor
    real_jit = thunder.jit
    real_pass = ex.fusion_pass
    had_own = "fusion_pass" in vars(ex)
    before = stats["regions"]

    def counting_pass(trace):
        out = real_pass(trace)
        stats["fusion_passes"] += 1
        stats["regions"] += sum(1 for b in out.bound_symbols if b.sym.is_fusion)
        return out

    thunder.jit = make_shim(real_jit, item.config.getoption("--fusion-alias-schedule"))
    ex.fusion_pass = counting_pass  # instance attribute, removed below
    try:
        yield
    finally:
        thunder.jit = real_jit
        if had_own:
            ex.fusion_pass = real_pass
        else:
            del ex.fusion_pass
        if stats["regions"] == before:
            no_region_items.append(item.name)


def pytest_report_header(config):
    if config.getoption("--fusion-alias-off"):
        return "fusion_alias peer plugin: redirection OFF (plain Thunder)"
    return (
        "fusion_alias peer plugin: thunder.jit(torch executors) -> fusion_alias.jit(backend='reference', "
        f"schedule={config.getoption('--fusion-alias-schedule')!r}) in {', '.join(PEER_FILES)}"
    )


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not config.getoption("--fusion-alias-off"):
        terminalreporter.write_line(
            f"fusion_alias peer plugin: {stats['redirected']} thunder.jit calls redirected to fusion_alias.jit, "
            f"{stats['via_executor']} thunderfx graphs compiled with executors=[fusion_alias.executor], "
            f"{stats['passed_through']} passed through; {stats['fusion_passes']} fusion passes formed "
            f"{stats['regions']} regions"
        )
        if no_region_items:
            terminalreporter.write_line(
                f"fusion_alias peer plugin: {len(no_region_items)} peer tests formed no fusion_alias region: "
                + ", ".join(no_region_items)
            )
