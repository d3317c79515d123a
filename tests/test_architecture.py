"""The package's shape: no import cycles, no pass stage importing a backend, modules of a readable size."""

from __future__ import annotations

import importlib.util
import pathlib

_SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "check_architecture.py"
_spec = importlib.util.spec_from_file_location("check_architecture", _SCRIPT)
arch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(arch)


def test_architecture_has_no_problems():
    assert arch.problems() == []


def test_checker_sees_lazy_imports_and_cycles(tmp_path, monkeypatch):
    pkg = tmp_path / "fusion_alias"
    (pkg / "backends").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "backends" / "__init__.py").write_text("")
    (pkg / "backends" / "reference.py").write_text("from fusion_alias.lowering import x\n")
    (pkg / "lowering.py").write_text("def f():\n    from fusion_alias.backends.reference import y\n")
    monkeypatch.setattr(arch, "ROOT", tmp_path)
    found = arch.problems()
    assert any(p.startswith("import cycle:") and "fusion_alias.lowering" in p for p in found), found
    assert "fusion_alias.lowering imports the backend fusion_alias.backends.reference" in found


def test_executor_keeps_its_public_names():
    import importlib

    from fusion_alias.errors import AliasInputError

    ex = importlib.import_module("fusion_alias.executor")  # (fusion_alias.executor is the executor object)

    assert ex.AliasInputError is AliasInputError
    assert ex.BACKENDS == ("auto", "nvfuser", "torch", "reference")
    assert ex.resolve_backend("reference") == "reference"
