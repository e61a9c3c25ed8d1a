"""`accy-opt`'s own command line: `--help` without xDSL's `--shrink`, `--version` naming
accy and xDSL, `--list-passes` with each pass's options, the note on stderr when no pass
is given (terminals only), and a start-up that does not import the lowering, the upstream
MLIR bindings or the numeric planning dependencies."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from importlib.metadata import version

import pytest
from accy.passes.registry import accy_passes

from accy.cli import opt
from accy.cli.opt import (
    NO_PASSES_NOTE,
    REPORT_NAMES,
    main,
    pass_listing,
    version_text,
    wants_no_passes_note,
)

GOOD = """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


def run_main(capsys, *argv: str) -> tuple[int | str | None, str, str]:
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


def test_help_has_no_shrink_and_points_at_list_passes(capsys):
    code, out, _ = run_main(capsys, "--help")
    assert code == 0
    assert "--shrink" not in out
    assert "--list-passes" in out
    # The -p help names --list-passes (argparse may wrap the text, but not inside a word).
    passes_help = out.split("-p PASSES, --passes PASSES", 1)[1].split("\n  -", 1)[0]
    assert "--list-passes" in passes_help


def test_shrink_is_not_an_argument(capsys, tmp_path):
    program = tmp_path / "p.mlir"
    program.write_text(GOOD)
    code, out, err = run_main(capsys, "--shrink", str(program))
    assert code == 1
    assert "unrecognized arguments: --shrink" in err
    assert out == ""


@pytest.mark.parametrize("flag", ["-v", "--version"])
def test_version_names_accy_and_xdsl(capsys, flag):
    code, out, _ = run_main(capsys, flag)
    assert code == 0
    assert "xdsl-opt" not in out
    assert out.strip() == version_text()
    assert version("accy") in out and version("xdsl") in out
    assert out.strip().startswith("accy-opt ")


def test_list_passes_lists_every_pass_with_options(capsys):
    code, out, err = run_main(capsys, "--list-passes")  # no input file needed
    assert code == 0 and err == ""
    passes = {name: factory() for name, factory in accy_passes().items()}
    for name, cls in passes.items():
        assert f"\n  {name}\n" in out + "\n"
        first_line = cls.__doc__.strip().splitlines()[0]
        assert " ".join(first_line.split()[:4]) in out  # its description
        for field in dataclasses.fields(cls):
            assert f"      {field.name.replace('_', '-')}=<" in out
    # an option shows its type, its default and the docstring's text for it
    assert "alignment=<int | None>  (default: unset)" in out
    alignment = "byte alignment of every buffer (default the target's: 64 on the CPU, 256 on CUDA)."
    assert alignment in out
    assert "check=<bool>  (default: false)" in out
    # no target named is cpu everywhere; a pass's unset target is the pipeline's
    assert "target=<str | None>  (default: unset)" in out
    assert "the target planned for (default cpu, as everywhere)" in out


def test_pass_listing_of_a_pass_class():
    @dataclasses.dataclass(frozen=True)
    class Example:
        """Does one thing. And more on
        a second line.

        Options:
        - block-size: the block size
          in elements.
        """

        block_size: int = 128
        rows: tuple[int, ...] = (1, 2)
        flag: bool = True

    listing = pass_listing({"example": Example})  # type: ignore[dict-item]
    assert listing.splitlines()[1:] == [
        "  example",
        "      Does one thing.",
        "      block-size=<int>  (default: 128)",
        "          the block size in elements.",
        "      rows=<tuple[int, ...]>  (default: 1,2)",
        "      flag=<bool>  (default: true)",
    ]


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_no_passes_note_only_on_a_terminal_without_passes():
    assert wants_no_passes_note("", _Stream(tty=True))
    assert wants_no_passes_note("  ", _Stream(tty=True))
    assert not wants_no_passes_note("", _Stream(tty=False))
    assert not wants_no_passes_note("accy-plan-shapes", _Stream(tty=True))
    closed = io.StringIO()
    closed.close()  # its isatty raises ValueError
    assert not wants_no_passes_note("", closed)
    assert "--list-passes" in NO_PASSES_NOTE and "-p" in NO_PASSES_NOTE


def test_no_note_when_stderr_is_not_a_terminal(capsys, tmp_path):
    program = tmp_path / "p.mlir"
    program.write_text(GOOD)
    main([str(program)])
    out, err = capsys.readouterr()
    assert err == ""
    assert "accy.add" in out


def test_note_when_stderr_is_a_terminal(capsys, tmp_path, monkeypatch):
    program = tmp_path / "p.mlir"
    program.write_text(GOOD)
    terminal = _Stream(tty=True)
    monkeypatch.setattr(opt.sys, "stderr", terminal)
    main([str(program)])
    assert terminal.getvalue() == NO_PASSES_NOTE + "\n"
    assert "accy.add" in capsys.readouterr().out


def test_report_names_match_the_reports():
    from accy.reports import REPORTS

    assert REPORT_NAMES == tuple(sorted(REPORTS))


HEAVY = (
    "torch_mlir",
    "numba_cuda_mlir",
    "matplotlib",
    "accy.passes.lower",
    "accy.reports",
    "accy.plot",
    "ml_dtypes",
)


def test_start_up_does_not_import_the_heavy_modules():
    code = (
        "import json, sys\n"
        "import accy.cli.opt\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        "if any(m == h or m.startswith(h + '.') for h in heavy))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout) == []
