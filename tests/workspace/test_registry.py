"""The kernel-family registry: package files, selection order, diagnostics with lines."""

from pathlib import Path
from textwrap import dedent

import pytest
from accy.passes.families import (
    PACKAGE_FAMILIES,
    Expression,
    FamilyEvaluationError,
    FamilyRegistry,
    RegistryError,
    UnknownNameError,
)

H200 = {"sm_count": 132}


def write(tmp_path: Path, text: str, name: str = "user.toml") -> Path:
    path = tmp_path / name
    path.write_text(dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_error(tmp_path: Path, text: str) -> RegistryError:
    path = write(tmp_path, text)
    with pytest.raises(RegistryError) as info:
        FamilyRegistry.load([path], include_package=False, target="cuda")
    assert str(info.value).startswith(f"{path}:{info.value.line}:{info.value.column}: error: ")
    return info.value


# Package files ------------------------------------------------------------------------------


def test_package_families_are_modules_of_their_own() -> None:
    modules = [f.source for f in PACKAGE_FAMILIES]
    assert all(m.startswith("accy.passes.families.") for m in modules)
    assert {"accy.passes.families.reduce_split", "accy.passes.families.dot_splitk"} <= set(modules)


def test_package_families_load_in_selection_order() -> None:
    registry = FamilyRegistry.load([], target="cuda")
    assert [f.id for f in registry.families] == [
        "convolution.tiled",
        "dot.splitk",
        "dot.tiled",
        "reduce.split",
        "reduce.row",
        "scan.multiblock",
        "scan.block",
        "sort.merge",
    ]
    assert all(f.targets == ("cuda",) for f in registry.families)


@pytest.mark.parametrize(
    ("kind", "env", "family", "workspaces"),
    [
        # partials reads `kept` (the reduce's result elements), not the plan's rows `n`.
        (
            "reduce",
            {"n": 2, "kept": 3, "k": 8192, "accumulator": 4},
            "reduce.split",
            {"partials": 3 * 132 * 8 * 4},
        ),
        # f64, i64 and ui64 accumulators take 8 bytes.
        (
            "reduce",
            {"n": 2, "kept": 3, "k": 8192, "accumulator": 8},
            "reduce.split",
            {"partials": 3 * 132 * 8 * 8},
        ),
        ("reduce", {"n": 2, "kept": 2, "k": 4096}, "reduce.row", {}),
        # carries read the scanned `width` and the `kept` rows, not `k` and `n`.
        (
            "scan",
            {"n": 2, "kept": 3, "k": 8, "width": 5000, "accumulator": 4},
            "scan.multiblock",
            {"carries": 5 * 3 * 4},
        ),
        ("scan", {"n": 3, "kept": 3, "k": 5000, "width": 1024}, "scan.block", {}),
        (
            "dot",
            {"n": 64, "k": 8192, "accumulator": 4},
            "dot.splitk",
            {"partials": 132 * 128 * 128 * 4},
        ),
        ("dot", {"n": 64, "k": 256}, "dot.tiled", {}),
    ],
)
def test_package_families_select_and_size(
    kind: str, env: dict[str, int], family: str, workspaces: dict[str, int]
) -> None:
    selected = FamilyRegistry.load([], target="cuda").select(kind, env | H200)
    assert selected is not None and selected.id == family
    assert selected.workspace_bytes(env | H200) == workspaces


def test_package_workspaces_live_in_the_arena() -> None:
    registry = FamilyRegistry.load([], target="cuda")
    assert all(w.arena for f in registry.families for w in f.workspaces)


def test_a_kind_without_families_selects_none() -> None:
    assert FamilyRegistry.load([]).select("elementwise", {}) is None


def test_an_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown work-item kind 'reduction'"):
        FamilyRegistry.load([]).select("reduction", {})


# Selection ----------------------------------------------------------------------------------

USER_FAMILIES = """
    [[family]]
    id = "user.reduce"
    kinds = ["reduce", "scan"]
    when = "k % 2 == 0"
    [[family.workspace]]
    name = "scratch"
    bytes = ["n * 8", "256"]
    arena = false
"""


def test_user_files_come_before_package_files(tmp_path: Path) -> None:
    registry = FamilyRegistry.load([write(tmp_path, USER_FAMILIES)], target="cuda")
    assert registry.families[0].id == "user.reduce"
    selected = registry.select("reduce", {"n": 100, "k": 8192} | H200)
    assert selected is not None and selected.id == "user.reduce"
    assert selected.workspace_bytes({"n": 100}) == {"scratch": 800}  # the largest term
    assert selected.workspace_bytes({"n": 1}) == {"scratch": 256}
    assert not selected.workspaces[0].arena


def test_when_falls_through_to_later_families(tmp_path: Path) -> None:
    registry = FamilyRegistry.load([write(tmp_path, USER_FAMILIES)], target="cuda")
    selected = registry.select("reduce", {"n": 100, "k": 8191} | H200)
    assert selected is not None and selected.id == "reduce.split"


def test_a_user_family_shadows_a_package_family_with_its_id(tmp_path: Path) -> None:
    override = """
        [[family]]
        id = "reduce.split"
        kinds = ["reduce"]
        when = "k > 65536"
    """
    registry = FamilyRegistry.load([write(tmp_path, override)], target="cuda")
    assert [f.id for f in registry.families].count("reduce.split") == 1
    selected = registry.select("reduce", {"n": 1, "k": 8192})
    assert selected is not None and selected.id == "reduce.row"


def test_files_load_in_the_order_given(tmp_path: Path) -> None:
    first = write(tmp_path, 'family = [{id = "a", kinds = ["dot"]}]', "first.toml")
    second = write(tmp_path, 'family = [{id = "b", kinds = ["dot"]}]', "second.toml")
    registry = FamilyRegistry.load([second, first], include_package=False, target="cuda")
    assert [f.id for f in registry.families] == ["b", "a"]


def test_a_failing_when_names_the_family(tmp_path: Path) -> None:
    registry = FamilyRegistry.load(
        [write(tmp_path, USER_FAMILIES)], include_package=False, target="cuda"
    )
    with pytest.raises(FamilyEvaluationError) as info:
        registry.select("scan", {"n": 1})
    assert str(info.value) == "family 'user.reduce' when: at column 1: unknown name 'k'"
    assert isinstance(info.value.error, UnknownNameError)


def test_a_failing_workspace_names_family_workspace_and_name(tmp_path: Path) -> None:
    registry = FamilyRegistry.load(
        [write(tmp_path, USER_FAMILIES)], include_package=False, target="cuda"
    )
    with pytest.raises(FamilyEvaluationError) as info:
        registry.families[0].workspace_bytes({"k": 2})
    message = "family 'user.reduce' workspace 'scratch': at column 1: unknown name 'n'"
    assert str(info.value) == message


def test_loaded_families_hold_parsed_expressions(tmp_path: Path) -> None:
    family = FamilyRegistry.load(
        [write(tmp_path, USER_FAMILIES)], include_package=False, target="cuda"
    )
    (only,) = family.families
    assert only.when == Expression.parse("k % 2 == 0")
    assert only.workspaces[0].bytes == (Expression.parse("n * 8"), Expression.parse("256"))


# Diagnostics --------------------------------------------------------------------------------


def test_an_unreadable_file_is_a_registry_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(RegistryError, match=f"^{missing}:1:1: error: cannot read family file"):
        FamilyRegistry.load([missing])


def test_a_toml_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        [[family]]
        id = "x"
        kinds = ["reduce"
        when = "1"
        """,
    )
    assert (error.line, error.column) == (4, 1)
    assert "(at line" not in error.message


def test_a_toml_error_at_end_of_document_names_the_last_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, '[[family]]\nid = "x"\nkinds =')
    assert (error.line, error.column) == (3, 8)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]

            [[family]]
            kinds = ["dot"]
            """,
            5,
            "family #2: missing key 'id'",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
            [[family]]
            id = 7
            kinds = ["dot"]
            """,
            5,
            "family #2: 'id' must be a non-empty string, got an integer",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["reduce", "windows"]
            """,
            3,
            "family 'a': unknown kind 'windows' (expected one of attention, broadcast, convolution, dot,",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = "dot"
            """,
            3,
            "family 'a': 'kinds' must be a non-empty array of strings, got a string",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = []
            """,
            3,
            "family 'a': 'kinds' must be a non-empty array of strings, got an empty array",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
              when   =   "k >"
            """,
            4,
            "family 'a' when: bad expression 'k >': at column 4: expected an integer",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
            whn = "k > 1"
            """,
            4,
            "family #1: unknown key 'whn' (expected one of id, kinds, when, workspace)",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
            [[family.workspace]]
            name = "w"
            bytes = "n * 4"
            arena = true
            """,
            6,
            "family 'a' workspace 'w': 'bytes' must be a non-empty array of strings, got a string",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
            [[family.workspace]]
            name = "w"
            bytes = [
              "n * 4",
              16,
            ]
            arena = true
            """,
            6,
            "family 'a' workspace 'w': 'bytes' must hold strings, got an integer",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
            [[family.workspace]]
            name = "w"
            bytes = ["n * 4", "n / 0)"]
            arena = true
            """,
            6,
            "family 'a' workspace 'w' bytes[1]: bad expression 'n / 0)': at column 6:",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
            [[family.workspace]]
            name = "w"
            bytes = ["4"]
            arena = true
            [[family.workspace]]
            name = "w"
            bytes = ["8"]
            arena = true
            """,
            9,
            "family 'a': workspace 'w' is declared twice",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
            [[family.workspace]]
            name = "w"
            bytes = ["4"]
            """,
            4,
            "family 'a' workspace 'w': missing key 'arena' (true or false)",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
            [[family.workspace]]
            name = "w"
            bytes = ["4"]
            arena = "yes"
            """,
            7,
            "family 'a' workspace 'w': 'arena' must be a boolean, got a string",
        ),
        (
            """
            [[family]]
            id = "a"
            kinds = ["dot"]
            [[family]]
            id = "b"
            kinds = ["dot"]
            [[family]]
            id = "a"
            kinds = ["dot"]
            """,
            8,
            "family 'a' is defined twice in this file",
        ),
        (
            """
            version = 2
            [[family]]
            id = "a"
            kinds = ["dot"]
            """,
            1,
            "unknown top-level key 'version' (expected 'family')",
        ),
        (
            """
            family = 3
            """,
            1,
            "'family' must be an array of tables ([[family]])",
        ),
    ],
)
def test_semantic_errors_name_their_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    error = load_error(tmp_path, text)
    assert error.message.startswith(message)
    assert error.line == line
