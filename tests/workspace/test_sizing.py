"""Workspace sizing (the seed's `metrale-memory-workspace.rs` invariants) through real
programs built with `accy.Builder` and planned with `accy.prepare`:

- an expression reads the function's named dims (`accy.dims`), `n`, `k`, `kept` and
  `sm_count`;
  any other name is a `WorkspaceError` naming family, workspace and name, at the work
  item's location — never 0;
- one term per (family, workspace), its bytes the largest over the family's nodes, listing
  every node (and naming the node that set the bytes);
- over several plans (row counts) the widest term wins, with that plan's rows and nodes;
- families are selected in order: user files first (in order), then the package's, and a
  user family shadows the package's family of the same id.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from accy.passes.workspace.sizing import (
    WorkspaceError,
    WorkspacePlan,
    WorkspaceTerm,
    function_dims,
    widest,
)
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr

import accy

TARGET = "cuda"
"""The target these sizes are for: the package's families are CUDA kernel families."""

SOURCE = "model.py"
"""The file the builder's ops are located in; item `i` of `reductions` is at line 10 + i."""


def family_file(tmp_path: Path, text: str, name: str = "user.toml") -> Path:
    path = tmp_path / name
    path.write_text(dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def reductions(
    widths: list[int],
    *,
    rows: int | None = 8,
    first: list[int | None] | None = None,
    dims: dict[str, int] | None = None,
):
    """A function `@f` reducing one `rows x k` parameter per width over its last dim (one
    reduce work item each, item i at `model.py:(10 + i):5`). `first`, if given, is an
    extra leading parameter's shape (what `n` reads for a static function). `rows=None`
    makes the row dim dynamic."""
    b = accy.Builder()
    params = [b.tensor("f32", [rows, k]) for k in widths]
    if first is not None:
        params.insert(0, b.tensor("f32", first))
    results = [b.tensor("f32", [rows]) for _ in widths]
    fb = b.begin_function("f", params, results)
    if dims is not None:
        fb.function.attributes["accy.dims"] = DictionaryAttr(
            {name: IntegerAttr(value, 64) for name, value in dims.items()}
        )
    offset = 0 if first is None else 1
    outs = []
    for i in range(len(widths)):
        fb.set_location(SOURCE, 10 + i, 5)
        outs.append(fb.reduce("add", fb.parameter(offset + i), [1]))
    fb.return_(outs)
    fb.finish()
    return b.finish()


def terms(module, **options) -> dict[tuple[str, str], WorkspaceTerm]:
    plan = accy.prepare(module, **options, target=TARGET).workspaces
    keys = [(t.family, t.name) for t in plan.terms]
    assert keys == sorted(set(keys)), "one term per (family, workspace), sorted"
    return {(t.family, t.name): t for t in plan.terms}


PROBE = """
[[family]]
id = "probe"
kinds = ["reduce"]
[[family.workspace]]
name = "k"
bytes = ["k"]
arena = false
[[family.workspace]]
name = "n"
bytes = ["n"]
arena = false
[[family.workspace]]
name = "kept"
bytes = ["kept"]
arena = false
[[family.workspace]]
name = "sm"
bytes = ["sm_count"]
arena = false
"""
"""A family whose workspaces are the names an expression reads, so a term shows them."""


def probe(tmp_path: Path, module, **options) -> dict[str, int]:
    found = terms(module, families=[family_file(tmp_path, PROBE)], **options)
    return {name: t.bytes for (family, name), t in found.items() if family == "probe"}


# Unknown names ------------------------------------------------------------------------------


def test_unknown_name_is_an_error_naming_family_workspace_and_name(tmp_path):
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "reduce.mine"
        kinds = ["reduce"]
        [[family.workspace]]
        name = "scratch"
        bytes = ["k * d_modle"]
        arena = true
        """,
    )
    module = reductions([100], dims={"d_model": 768})
    with pytest.raises(WorkspaceError) as info:
        accy.prepare(module, families=[user], target=TARGET)
    message = str(info.value)
    assert message.startswith(f"{SOURCE}:10:5: error: "), message
    assert "family 'reduce.mine'" in message
    assert "workspace 'scratch'" in message
    assert "unknown name 'd_modle'" in message


def test_unknown_name_is_located_at_the_failing_work_item(tmp_path):
    # Only the second reduction (k = 5000) runs the family: the error is at its line.
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "reduce.wide"
        kinds = ["reduce"]
        when = "k > 1000"
        [[family.workspace]]
        name = "partials"
        bytes = ["n * 4", "rows * 4"]
        arena = true
        """,
    )
    with pytest.raises(WorkspaceError) as info:
        accy.prepare(reductions([100, 5000]), families=[user], target=TARGET)
    message = str(info.value)
    assert message.startswith(f"{SOURCE}:11:5: error: family 'reduce.wide' workspace 'partials'")
    assert "unknown name 'rows'" in message


def test_unknown_name_in_when_is_an_error_too(tmp_path):
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "reduce.guess"
        kinds = ["reduce"]
        when = "breadth > 10"
        """,
    )
    with pytest.raises(WorkspaceError) as info:
        accy.prepare(reductions([100]), families=[user], target=TARGET)
    assert str(info.value).startswith(f"{SOURCE}:10:5: error: family 'reduce.guess' when")
    assert "unknown name 'breadth'" in str(info.value)


def test_kept_is_not_defaulted_for_a_dynamic_program_without_rows():
    # The package's reduce.split reads `kept` (here the dynamic row dim); with no plan rows
    # it is unbound: an error that says to give rows, not 0.
    with pytest.raises(WorkspaceError) as info:
        accy.prepare(reductions([8192], rows=None), target=TARGET)
    message = str(info.value)
    assert message.startswith(f"{SOURCE}:10:5: error: family 'reduce.split' workspace 'partials'")
    assert "unknown name 'kept'" in message
    assert "give rows" in message


def test_n_is_not_defaulted_for_a_dynamic_program_without_rows(tmp_path):
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "reduce.byn"
        kinds = ["reduce"]
        [[family.workspace]]
        name = "w"
        bytes = ["n * 4"]
        arena = true
        """,
    )
    with pytest.raises(WorkspaceError) as info:
        accy.prepare(reductions([8192], rows=None), families=[user], target=TARGET)
    assert "family 'reduce.byn' workspace 'w'" in str(info.value)
    assert "unknown name 'n'" in str(info.value)
    assert "give rows" in str(info.value)


def test_kept_of_a_static_dim_needs_no_rows(tmp_path):
    # A dynamic function reducing a static operand: `kept` is bound without rows (`n` is not).
    b = accy.Builder()
    fb = b.begin_function(
        "g", [b.tensor("f32", [None, 4]), b.tensor("f32", [3, 5, 8192])], [b.tensor("f32", [5])]
    )
    fb.return_([fb.reduce("add", fb.parameter(1), [0, 2])])
    fb.finish()
    found = terms(b.finish())
    assert found["reduce.split", "partials"].bytes == 5 * 132 * 8 * 4


def test_family_without_a_failing_name_never_sees_one(tmp_path):
    # A name only an unselected family reads is never evaluated.
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "scan.odd"
        kinds = ["scan"]
        [[family.workspace]]
        name = "x"
        bytes = ["nonsense"]
        arena = true
        """,
    )
    assert terms(reductions([100]), families=[user]) == {}


# Terms --------------------------------------------------------------------------------------

WIDTH_FAMILY = """
[[family]]
id = "reduce.byk"
kinds = ["reduce"]
[[family.workspace]]
name = "rowbuf"
bytes = ["k * n * 4"]
arena = true
"""


@pytest.mark.parametrize(("widths", "max_node"), [([100, 300], 1), ([300, 100], 0)])
def test_term_is_the_maximum_over_the_family_nodes(tmp_path, widths, max_node):
    user = family_file(tmp_path, WIDTH_FAMILY)
    found = terms(reductions(widths, rows=8), families=[user])
    assert list(found) == [("reduce.byk", "rowbuf")]
    term = found["reduce.byk", "rowbuf"]
    assert term.bytes == 300 * 8 * 4
    assert term.nodes == (0, 1)
    assert term.max_node == max_node
    assert term.arena is True
    assert term.rows is None  # a static program: one plan
    assert term.describe() == "reduce.byk rowbuf 9600 bytes arena nodes [0, 1]"


def test_one_term_per_family_and_workspace(tmp_path):
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "reduce.two"
        kinds = ["reduce"]
        when = "k < 1000"
        [[family.workspace]]
        name = "b"
        bytes = ["k"]
        arena = false
        [[family.workspace]]
        name = "a"
        bytes = ["2 * k", "3 * n"]
        arena = true
        """,
    )
    # Three narrow reductions run reduce.two, one wide one the package's reduce.split.
    module = reductions([10, 20, 8192, 30], rows=4)
    plan = accy.prepare(module, families=[user], sm_count=10, target=TARGET).workspaces
    assert [t.describe() for t in plan.terms] == [
        "reduce.split partials 1280 bytes arena nodes [2]",
        "reduce.two a 60 bytes arena nodes [0, 1, 3]",
        "reduce.two b 30 bytes own nodes [0, 1, 3]",
    ]
    assert plan.family_of == {0: "reduce.two", 1: "reduce.two", 2: "reduce.split", 3: "reduce.two"}
    assert plan.term("reduce.two", "a").max_node == 3
    assert [t.name for t in plan.terms_of(2)] == ["partials"]
    assert plan.term("reduce.two", "missing") is None


def test_items_without_a_family_have_no_terms():
    # The package's reduce.row (k <= 4096) declares no workspace.
    plan = accy.prepare(reductions([100, 4096]), target=TARGET).workspaces
    assert plan.terms == ()
    assert plan.family_of == {0: "reduce.row", 1: "reduce.row"}


# Several plans ------------------------------------------------------------------------------


def test_widest_over_plans_keeps_the_largest_plan():
    # reduce.split partials = n * sm_count * 8 * 4: the last plan is the widest.
    module = reductions([8192, 6000], rows=None)
    term = terms(module, rows=[1, 64, 4096], sm_count=132)["reduce.split", "partials"]
    assert term.bytes == 4096 * 132 * 8 * 4
    assert term.rows == 4096
    assert term.nodes == (0, 1)


def test_widest_keeps_that_plans_rows_and_nodes(tmp_path):
    # Bytes shrink with n while more items run the family as n grows: the widest plan
    # (rows 1) has fewer nodes than the later ones, and its nodes are the term's.
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "reduce.probe"
        kinds = ["reduce"]
        when = "k * n >= 6400"
        [[family.workspace]]
        name = "w"
        bytes = ["(100000 / n) * 4"]
        arena = true
        """,
    )
    module = reductions([6400, 100], rows=None)
    plan = accy.prepare(module, rows=[1, 64, 4096], families=[user], target=TARGET).workspaces
    term = plan.term("reduce.probe", "w")
    assert (term.bytes, term.rows, term.nodes, term.max_node) == (400000, 1, (0,), 0)
    assert term.describe() == "reduce.probe w 400000 bytes arena nodes [0] rows 1"
    # family_of is the union over the plans.
    assert plan.family_of == {0: "reduce.probe", 1: "reduce.probe"}


def test_widest_prefers_the_earlier_plan_on_ties():
    def plan(rows: int, nodes: tuple[int, ...], size: int) -> WorkspacePlan:
        term = WorkspaceTerm("f", "w", size, True, nodes, nodes[-1], rows)
        return WorkspacePlan((term,), {n: "f" for n in nodes})

    merged = widest([plan(1, (0,), 64), plan(64, (0, 1), 64), plan(4096, (1,), 8)])
    assert merged.terms == (WorkspaceTerm("f", "w", 64, True, (0,), 0, 1),)
    assert widest([]).terms == ()


# Names --------------------------------------------------------------------------------------

DIMS_FAMILY = """
[[family]]
id = "reduce.dims"
kinds = ["reduce"]
[[family.workspace]]
name = "model"
bytes = ["d_model * 2"]
arena = false
"""


def test_named_dims_from_the_function_text(tmp_path):
    module = accy.parse(
        """
        func.func @f(%a: tensor<8x100xf32>) -> tensor<8xf32> attributes {accy.dims = {d_model = 768 : i64}} {
          %0 = accy.reduce add %a, dims = [1] : (tensor<8x100xf32>) -> tensor<8xf32>
          func.return %0 : tensor<8xf32>
        }
        """
    )
    function = next(op for op in module.walk() if op.name == "func.func")
    assert function_dims(function) == {"d_model": 768}
    user = family_file(tmp_path, DIMS_FAMILY)
    assert terms(module, families=[user])["reduce.dims", "model"].bytes == 1536


def test_named_dims_set_on_the_func_op(tmp_path):
    module = reductions([100], dims={"d_model": 1024, "heads": 16})
    user = family_file(tmp_path, DIMS_FAMILY)
    assert terms(module, families=[user])["reduce.dims", "model"].bytes == 2048


def test_named_dims_must_be_integers():
    module = reductions([100])
    function = next(op for op in module.walk() if op.name == "func.func")
    function.attributes["accy.dims"] = DictionaryAttr({"d_model": StringAttr("big")})
    with pytest.raises(accy.AccyError, match="accy.dims must be a dictionary of integers"):
        function_dims(function)


def test_k_n_and_sm_count_of_a_static_function(tmp_path):
    # n: the leading dim of the FIRST parameter (7), not of the reduced one (5).
    module = reductions([300], rows=5, first=[7, 2])
    assert probe(tmp_path, module, sm_count=100) == {"k": 300, "n": 7, "kept": 5, "sm": 100}


def test_n_of_a_static_function_ignores_rows(tmp_path):
    module = reductions([300], rows=5)
    assert probe(tmp_path, module, rows=[1000]) == {"k": 300, "n": 5, "kept": 5, "sm": 132}


def test_k_and_n_of_a_dynamic_function(tmp_path):
    # n is the plan's rows; a dynamic last dim makes k the rows too, a dynamic kept dim kept.
    assert probe(tmp_path, reductions([300], rows=None), rows=[50]) == {
        "k": 300,
        "n": 50,
        "kept": 50,
        "sm": 132,
    }
    b = accy.Builder()
    fb = b.begin_function("g", [b.tensor("f32", [4, None])], [b.tensor("f32", [4])])
    fb.return_([fb.reduce("max", fb.parameter(0), [1])])
    fb.finish()
    assert probe(tmp_path, b.finish(), rows=[50]) == {"k": 50, "n": 50, "kept": 4, "sm": 132}


def test_k_is_the_last_dim_of_the_first_operand(tmp_path):
    # A reduction over dim 0 still reads the last dim as k; it keeps 3 rows, not n = 9.
    b = accy.Builder()
    fb = b.begin_function("g", [b.tensor("f32", [9, 3])], [b.tensor("f32", [3])])
    fb.return_([fb.reduce("add", fb.parameter(0), [0])])
    fb.finish()
    assert probe(tmp_path, b.finish()) == {"k": 3, "n": 9, "kept": 3, "sm": 132}


def _reduce_function(shape: list[int], dims: list[int], first: list[int] | None = None):
    """`@g` reducing a parameter of `shape` over `dims`; `first`, if given, is an extra
    leading parameter's shape (what `n` reads)."""
    b = accy.Builder()
    kept = [size for d, size in enumerate(shape) if d not in dims]
    params = [b.tensor("f32", shape)] if first is None else [b.tensor("f32", first)]
    if first is not None:
        params.append(b.tensor("f32", shape))
    fb = b.begin_function("g", params, [b.tensor("f32", kept)])
    fb.return_([fb.reduce("add", fb.parameter(len(params) - 1), dims)])
    fb.finish()
    return b.finish()


@pytest.mark.parametrize(
    ("shape", "dims", "first", "n", "kept"),
    [
        # A full reduction keeps one row, however long the leading dim (n).
        ([10**8], [0], None, 10**8, 1),
        # kept > n: a leading reduced dim of a 3-D operand keeps 3 * 5000 rows.
        ([5000, 3, 5000], [0], None, 5000, 15000),
        # kept > n: the reduced operand is not the first parameter.
        ([64, 8192], [1], [2], 2, 64),
        # kept < n: the leading and last dims are reduced.
        ([64, 3, 8192], [0, 2], None, 64, 3),
        # kept == n: all but the leading dim reduced.
        ([64, 3, 8192], [1, 2], None, 64, 64),
        # kept == n: a 2-D row reduction of the first parameter (the seeds' programs).
        ([16, 8192], [1], None, 16, 16),
    ],
)
def test_split_partials_follow_the_kept_rows_not_n(tmp_path, shape, dims, first, n, kept):
    module = _reduce_function(shape, dims, first)
    assert probe(tmp_path, module)["n"] == n
    assert probe(tmp_path, module)["kept"] == kept
    term = terms(module)["reduce.split", "partials"]
    assert term.bytes == kept * 132 * 8 * 4  # one 4-byte partial per kept row and block


def test_split_partials_are_what_the_cuda_kernel_indexes():
    # The lowering checks the plan's term against the bytes its kernels index
    # (rows * grid * 4, cuda_reductions.split_reduce_kernel): exactly equal here.
    from accy.passes.families.reduce_split import SPLIT_BLOCKS_PER_SM
    from accy.passes.lower.cuda_reductions import ReductionShape

    for shape, dims, first in (
        ([5000, 3, 5000], [0], None),
        ([64, 8192], [1], [2]),
        ([64, 3, 8192], [0, 2], None),
        ([10**8], [0], None),
    ):
        prep = accy.prepare(_reduce_function(shape, dims, first), sm_count=100, target=TARGET)
        (item,) = prep.schedule.work_items
        assert prep.workspaces.family_of[item.id] == "reduce.split"
        needed = ReductionShape(item.root).rows * 100 * SPLIT_BLOCKS_PER_SM * 4
        assert prep.workspaces.term("reduce.split", "partials").bytes == needed


def test_kept_of_a_scan_is_its_positions_off_the_scanned_dim(tmp_path):
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "scan.kept"
        kinds = ["scan"]
        [[family.workspace]]
        name = "w"
        bytes = ["kept"]
        arena = false
        """,
    )
    for dim, kept in ((2, 2 * 3), (1, 2 * 5000), (0, 3 * 5000)):
        b = accy.Builder()
        t = b.tensor("f32", [2, 3, 5000])
        fb = b.begin_function("g", [t, t], [t])
        fb.return_([fb.scan("add", fb.parameter(0), fb.parameter(1), dim)])
        fb.finish()
        assert terms(b.finish(), families=[user])["scan.kept", "w"].bytes == kept


def test_kept_is_unbound_for_other_kinds(tmp_path):
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "dot.kept"
        kinds = ["dot"]
        [[family.workspace]]
        name = "w"
        bytes = ["kept * 4"]
        arena = true
        """,
    )
    b = accy.Builder()
    fb = b.begin_function(
        "g", [b.tensor("f32", [4, 8]), b.tensor("f32", [8, 2])], [b.tensor("f32", [4, 2])]
    )
    fb.return_([fb.dot_general(fb.parameter(0), fb.parameter(1), contracting=([1], [0]))])
    fb.finish()
    with pytest.raises(WorkspaceError, match="unknown name 'kept'.*reduce and scan work items"):
        accy.prepare(b.finish(), families=[user], target=TARGET)


def test_n_of_a_function_whose_first_parameter_is_a_scalar_is_unbound(tmp_path):
    module = reductions([300], rows=5, first=[])
    with pytest.raises(WorkspaceError, match="unknown name 'n'"):
        probe(tmp_path, module)


# Selection order ----------------------------------------------------------------------------


def test_user_family_shadows_the_package_family_of_the_same_id(tmp_path):
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "reduce.split"
        kinds = ["reduce"]
        when = "k > 10"
        [[family.workspace]]
        name = "partials"
        bytes = ["k * 2"]
        arena = false
        """,
    )
    # Package: k = 100 would run reduce.row; k = 8192 reduce.split at n * sm_count * 32.
    plan = accy.prepare(reductions([100, 8192]), families=[user], target=TARGET).workspaces
    assert plan.family_of == {0: "reduce.split", 1: "reduce.split"}
    assert [t.describe() for t in plan.terms] == [
        "reduce.split partials 16384 bytes own nodes [0, 1]"
    ]
    # Narrower than the user's `when`: the package's reduce.row, not the shadowed split.
    plan = accy.prepare(reductions([8]), families=[user], target=TARGET).workspaces
    assert plan.family_of == {0: "reduce.row"}


def test_user_files_are_searched_in_order_before_the_package(tmp_path):
    def catch_all(name: str, family: str) -> Path:
        return family_file(
            tmp_path,
            f"""
            [[family]]
            id = "{family}"
            kinds = ["reduce"]
            """,
            name,
        )

    first, second = (
        catch_all("first.toml", "reduce.first"),
        catch_all("second.toml", "reduce.second"),
    )
    module = reductions([8192])
    assert accy.prepare(module, families=[first, second], target=TARGET).workspaces.family_of == {
        0: "reduce.first"
    }
    assert accy.prepare(module, families=[second, first], target=TARGET).workspaces.family_of == {
        0: "reduce.second"
    }
    assert accy.prepare(module, target=TARGET).workspaces.family_of == {0: "reduce.split"}


def test_sm_count_changes_the_split_reduction_partials():
    module = reductions([8192], rows=16)
    sizes = {sm: terms(module, sm_count=sm)["reduce.split", "partials"].bytes for sm in (100, 132)}
    assert sizes == {100: 16 * 100 * 8 * 4, 132: 16 * 132 * 8 * 4}


# The command line ---------------------------------------------------------------------------

MALFORMED = """\
[[family]]
id = "reduce.bad"
kinds = ["reduce"]
when = "k >"
"""


def test_malformed_family_file_through_accy_opt(tmp_path):
    (tmp_path / "bad.toml").write_text(MALFORMED)
    (tmp_path / "f.mlir").write_text(
        """\
func.func @f(%a: tensor<8x100xf32>) -> tensor<8xf32> {
  %0 = accy.reduce add %a, dims = [1] : (tensor<8x100xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
"""
    )
    tool = Path(sys.executable).parent / "accy-opt"
    assert tool.exists(), "accy-opt is not installed next to the running Python"
    result = subprocess.run(
        [str(tool), "f.mlir", "--accy-families=bad.toml", "-p", "accy-size-workspaces"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        (
            "bad.toml:4:1: error: family 'reduce.bad' when: bad expression 'k >': at column 4: "
            "expected an integer, a name or '(', got end of input"
        )
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["--accy-families=bad.toml", "--accy-report=workspaces"],
        # The pass reads its family file where families are declared: the CUDA target.
        ["-p", 'accy-size-workspaces{families="bad.toml" target=cuda}'],
    ],
)
def test_malformed_family_file_other_spellings(tmp_path, monkeypatch, capsys, argv):
    from accy.cli.opt import main

    (tmp_path / "bad.toml").write_text(MALFORMED)
    (tmp_path / "f.mlir").write_text(
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %a : tensor<4xf32>\n}\n"
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["f.mlir", *argv])
    out, err = capsys.readouterr()
    assert exit_.value.code == 1
    assert out == ""
    assert err.startswith("bad.toml:4:1: error: family 'reduce.bad' when: bad expression"), err


@pytest.mark.parametrize(
    "shape,dim,family,carries",
    [
        ([8, 4, 3000], 2, "scan.multiblock", 3 * 32 * 4),  # was sized k=3000 tiles x n=8 rows
        ([3000, 8], 0, "scan.multiblock", 3 * 8 * 4),  # k=8 chose the block scan
        ([4, 5000], 1, "scan.multiblock", 5 * 4 * 4),  # a row scan: as before (kept = n)
        ([8, 1000], 1, "scan.block", None),
    ],
)
def test_scan_carries_follow_the_scanned_width_and_kept_rows(shape, dim, family, carries):
    # The kernel stores carries[row, tile]: ceil_div(width, 1024) tiles for each kept row.
    b = accy.Builder()
    t = b.tensor("f32", shape)
    fb = b.begin_function("g", [t, t], [t])
    fb.return_([fb.scan("add", fb.parameter(0), fb.parameter(1), dim)])
    fb.finish()
    module = b.finish()
    prep = accy.prepare(module, target=TARGET)
    assert set(prep.workspaces.family_of.values()) == {family}
    found = {(t.family, t.name): t.bytes for t in prep.workspaces.terms}
    assert found.get(("scan.multiblock", "carries")) == carries
    from accy.passes.lower.lower_pass import lower_module

    lower_module(module, prep.manager, "cuda")  # the lowering's exact-size check passes


def test_width_of_a_reduce_is_its_reduced_positions(tmp_path):
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "reduce.width"
        kinds = ["reduce"]
        [[family.workspace]]
        name = "w"
        bytes = ["width"]
        arena = false
        """,
    )
    for dims, width in (([2], 5000), ([0, 2], 2 * 5000), ([1], 3)):
        b = accy.Builder()
        t = b.tensor("f32", [2, 3, 5000])
        kept = [d for i, d in enumerate([2, 3, 5000]) if i not in dims]
        fb = b.begin_function("g", [t], [b.tensor("f32", kept)])
        fb.return_([fb.reduce("add", fb.parameter(0), dims)])
        fb.finish()
        assert terms(b.finish(), families=[user])["reduce.width", "w"].bytes == width


def test_a_name_bound_for_other_kinds_says_which(tmp_path):
    """`accumulator` is bound for reduce, scan and dot items: an elementwise family that
    reads it is an error saying so, at the work item."""
    user = family_file(
        tmp_path,
        """
        [[family]]
        id = "elementwise.mine"
        kinds = ["elementwise"]
        [[family.workspace]]
        name = "scratch"
        bytes = ["accumulator * 16"]
        arena = true
        """,
    )
    module = accy.parse(
        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %e = accy.exponential %x : tensor<4xf32>\n"
        "  func.return %e : tensor<4xf32>\n}",
        filename=SOURCE,
    )
    with pytest.raises(WorkspaceError) as info:
        accy.prepare(module, families=[user], target=TARGET)
    message = str(info.value)
    assert message.startswith(f"{SOURCE}:2:")
    assert "`accumulator` is defined for reduce, scan and dot work items only" in message
