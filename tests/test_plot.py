"""The arena plot (`--accy-arena-plot`, accy/plot.py): PNG and SVG files are written;
the SVG's text (kept as text) carries the legend (input/output/temporary/constant), SSA
names, KiB-formatted byte ticks and integer work-item ticks; boxes too small for a label
(a 128-byte buffer beside 128 KiB ones) are not labelled in place but listed beside the
legend; long programs get integer ticks only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

import accy
from accy.plot import format_bytes, plot_arena

MLP = Path(__file__).parents[1] / "examples" / "mlp.mlir"

# A 128-byte input and a 128-byte constant beside 128 KiB buffers.
MIX = """
func.func @mix(%big: tensor<256x128xf32>, %small: tensor<32xf32>) -> (tensor<256x128xf32>, tensor<32xf32>) {
  %c = accy.constant dense<[%s]> : tensor<32xf32>
  %s1 = accy.add %small, %c : tensor<32xf32>
  %t = accy.exponential %big : tensor<256x128xf32>
  %m = accy.reduce max %t, dims = [1] : (tensor<256x128xf32>) -> tensor<256xf32>
  %mb = accy.broadcast_in_dim %m, dims = [0] : (tensor<256xf32>) -> tensor<256x128xf32>
  %d = accy.divide %t, %mb : tensor<256x128xf32>
  %s2 = accy.multiply %s1, %s1 : tensor<32xf32>
  func.return %d, %s2 : tensor<256x128xf32>, tensor<32xf32>
}
""".replace("[%s]", "[" + ", ".join(f"{i}.0" for i in range(32)) + "]")


def _chain(steps: int) -> str:
    """`steps` reduce-broadcast-add rounds: about two work items each."""
    lines = ["func.func @long(%x0: tensor<4x3xf32>) -> tensor<4x3xf32> {"]
    for i in range(1, steps + 1):
        lines += [
            f"  %r{i} = accy.reduce add %x{i - 1}, dims = [1] : (tensor<4x3xf32>) -> tensor<4xf32>",
            f"  %b{i} = accy.broadcast_in_dim %r{i}, dims = [0] : (tensor<4xf32>) -> tensor<4x3xf32>",
            f"  %x{i} = accy.add %x{i - 1}, %b{i} : tensor<4x3xf32>",
        ]
    lines += [f"  func.return %x{steps} : tensor<4x3xf32>", "}"]
    return "\n".join(lines)


def _plot(text: str, path: Path) -> accy.Preparation:
    prep = accy.prepare(accy.parse(text), target="cuda")  # a device arena holds every buffer
    plot_arena(prep.module, prep.manager, path)
    assert path.exists() and path.stat().st_size > 1000
    assert not list(path.parent.glob(".*partial*"))
    return prep


def _texts(svg: Path) -> list[str]:
    """The text strings of an SVG written with svg.fonttype 'none'."""
    import html

    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg.read_text())]


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (0, 40, 512, 1024, 44800, 3 << 20, 5 << 30)] == [
        "0",
        "40 B",
        "512 B",
        "1 KiB",
        "43.75 KiB",
        "3 MiB",
        "5 GiB",
    ]


def test_mlp_plot_png_and_svg(tmp_path: Path) -> None:
    png = tmp_path / "mlp.png"
    _plot(MLP.read_text(), png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "mlp.svg"
    prep = _plot(MLP.read_text(), svg)
    texts = _texts(svg)
    assert {"input", "output", "temporary"} <= set(texts)
    assert "%w1" in texts and "%relu" in texts  # SSA names, not slot numbers
    assert not any(re.fullmatch(r"s\d+", t) for t in texts)
    assert "32 KiB" in texts and "40 KiB" in texts  # KiB labels and ticks
    assert any(t.startswith("@mlp: arena 43.75 KiB") for t in texts)
    items = [w.id for w in prep.schedule.work_items]
    for item in items:  # one integer tick per work item, with its kind
        assert str(item) in texts
    assert not any(re.fullmatch(r"-?\d+\.\d+", t) for t in texts)  # no fractional ticks
    assert "dot" in texts and "elementwise" in texts


def test_slivers_are_listed_not_labelled(tmp_path: Path) -> None:
    svg = tmp_path / "mix.svg"
    _plot(MIX, svg)
    texts = _texts(svg)
    assert {"input", "output", "temporary", "constant"} <= set(texts)
    assert "%big" in texts and "%t" in texts  # 128 KiB boxes labelled in place
    assert "%c" in texts  # the constant, in its band
    assert "too small to label:" in texts
    # the 128-byte input is a sliver: in the side list, never as a box label
    assert "%small 128 B at 256 KiB, items 0–3" in texts
    assert not any(
        t.startswith("%small") and t != "%small 128 B at 256 KiB, items 0–3" for t in texts
    )
    assert "256 KiB" in texts and "128 KiB" in texts
    _plot(MIX, tmp_path / "mix.png")


def test_long_program_integer_ticks(tmp_path: Path) -> None:
    svg = tmp_path / "long.svg"
    prep = _plot(_chain(16), svg)
    assert len(prep.schedule.work_items) > 24
    texts = _texts(svg)
    ticks = [t for t in texts if re.fullmatch(r"-?[\d.]+", t)]
    assert ticks and all(re.fullmatch(r"\d+", t) for t in ticks)
    _plot(_chain(16), tmp_path / "long.png")


def test_several_functions(tmp_path: Path) -> None:
    text = (Path(__file__).parents[1] / "lit_tests" / "arena" / "plot.mlir").read_text()
    svg = tmp_path / "two.svg"
    _plot(text, svg)
    texts = _texts(svg)
    assert any(t.startswith("@plot: arena 768 B") for t in texts)
    assert any(t.startswith("@loop: arena") for t in texts)
    assert "%a" in texts and "iterate" in texts
