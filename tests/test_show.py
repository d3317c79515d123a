"""The partition picture, the FUSION_ALIAS_LOG switch and the cut reasons behind both."""

import io
import logging
import os
import subprocess
import sys

import pytest
import torch

import fusion_alias
from fusion_alias import log, report
from helpers import assert_same, region_count, run_both
from programs import SEED_PROGRAMS, aliased_inputs, h, k, tanh_pow4, write_then_add

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _report(jitted):
    import thunder

    r = report.kept_report(thunder.last_traces(jitted))
    assert r is not None
    return r


@pytest.mark.parametrize("fn, make_inputs, bound", SEED_PROGRAMS, ids=[p[0].__name__ for p in SEED_PROGRAMS])
def test_report_matches_the_compiled_regions(fn, make_inputs, bound):
    jitted, got, expected, sj, se = run_both(fn, make_inputs, backend="reference")
    assert_same(got, expected, sj, se)
    r = _report(jitted)
    assert len(r.regions) == region_count(jitted)
    names = [b.sym.name for b in fusion_alias.regions(jitted)]
    assert [reg.name for reg in r.regions] == names
    # every region after the first has a reason, and each reason is an edge that forced a cut
    for reg in r.regions[1:]:
        assert any(c.region == reg.index for c in r.cuts), (fn.__name__, reg.name)
    forced = {(e.src, e.dst) for e in r.edges if e.forced_cut}
    for c in r.cuts:
        if c.reason != "backward":
            assert (c.src, c.dst) in forced
        if c.reason in report.HAZARD_KINDS:  # a hazard cut names the memory on both sides
            assert c.written and c.read, c


def test_cut_reasons_of_h():
    jitted, got, expected, sj, se = run_both(h, aliased_inputs, backend="reference")
    r = _report(jitted)
    # base_updates: both writes write a, so the only cut is between the read of a[0, 0]
    # (region 0) and a's write-back (region 1)
    assert [(c.region, c.reason) for c in r.cuts] == [(1, "war")]
    (war,) = r.cuts
    assert war.written == ["a"]
    assert r.regions[0].writebacks == []
    assert [dst for _, dst in r.regions[1].writebacks] == ["a"]


def test_no_cut_no_reason():
    jitted, *_ = run_both(tanh_pow4, aliased_inputs, backend="reference")
    r = _report(jitted)
    assert len(r.regions) == 1 and r.cuts == []
    assert not any(e.forced_cut for e in r.edges)


def test_ignore_hazards_has_no_hazard_cuts():
    jitted, *_ = run_both(k, aliased_inputs, backend="reference", unsafe_ignore_hazards=True)
    r = _report(jitted)
    assert all(c.reason not in report.HAZARD_KINDS for c in r.cuts)


def test_log_switch_prints_regions_and_cuts():
    stream = io.StringIO()
    log.set_logs(regions=True, stream=stream)
    try:
        jitted, *_ = run_both(write_then_add, aliased_inputs, backend="reference")
    finally:
        log.set_logs()
    text = stream.getvalue()
    n = region_count(jitted)
    assert f"write_then_add: {n} regions" in text
    assert text.count("cut before FusionAlias") == len(_report(jitted).cuts) >= n - 1
    assert "writes back" in text and " -> a" in text


def test_log_off_stays_off_under_a_root_logger_at_info():
    log.set_logs()
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    try:
        assert not log.wants_regions()
        log.set_logs(graph=True, stream=io.StringIO())
        assert log.wants_regions()
    finally:
        root.setLevel(level)
        log.set_logs()
    assert not log.wants_regions()


def test_env_var_in_a_fresh_process():
    code = (
        "import torch, fusion_alias\n"
        "from fusion_alias.bench.programs import h\n"
        "x = torch.randn(5, 5)\n"
        "fusion_alias.jit(h, backend='reference')(x, x[0, 0])\n"
    )
    env = dict(os.environ, FUSION_ALIAS_LOG="regions", PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "[fusion_alias.regions] h: 2 regions" in out.stderr
    assert "cut before FusionAlias1: war" in out.stderr


@pytest.mark.parametrize("suffix", ["svg", "png"])
def test_explain_draws_a_picture(tmp_path, suffix):
    x = torch.randn(5, 5)
    jitted = fusion_alias.jit(h, backend="reference")
    jitted(x, x[0, 0])
    path = tmp_path / f"p.{suffix}"
    text = fusion_alias.explain(jitted, picture=str(path))
    assert "FusionAlias0" in text
    data = path.read_bytes()
    assert len(data) > 5000
    if suffix == "svg":
        svg = data.decode()
        for word in ("FusionAlias0", "FusionAlias1", "forced a cut", "cut before FusionAlias1"):
            assert word in svg, word
    else:
        assert data[:8] == b"\x89PNG\r\n\x1a\n"


def test_picture_before_any_call_is_an_error(tmp_path):
    jitted = fusion_alias.jit(h, backend="reference")
    with pytest.raises(Exception):
        fusion_alias.explain(jitted, picture=str(tmp_path / "p.svg"))


def test_show_command(tmp_path):
    out = tmp_path / "k.svg"
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "fusion_alias.show", "k", "-o", str(out)],
                          env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "k: 2 regions" in proc.stdout and "matches eager" in proc.stdout
    assert out.stat().st_size > 5000


def test_show_command_module_function(tmp_path):
    src = tmp_path / "prog.py"
    src.write_text("def step(a, b):\n    a.mul_(2)\n    return b.sum()\n")
    out = tmp_path / "step.png"
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "fusion_alias.show", f"{src}:step", "--inputs",
                           "x, x[1]", "-o", str(out)], env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "matches eager" in proc.stdout and "cut before FusionAlias1: raw" in proc.stdout
