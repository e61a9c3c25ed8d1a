"""`accy-opt`: xDSL's opt driver with the accy dialect and accy's passes.

Every user mistake (bad syntax, a verifier failure, an unknown pass, a bad pass option, a
missing file) prints one diagnostic, `file:line:col: error: ...` where a location exists
or `error: ...` otherwise, and exits with status 1. `--verify-diagnostics` checks the
errors against the input's `expected-error` annotations, as mlir-opt does
(`accy.cli.expected_diagnostics`), and fails on any mismatch. The only target is MLIR text.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from io import StringIO
from pathlib import Path
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from accy.cli.expected_diagnostics import check_expectations, parse_expectations
from accy.diagnostics import AccyError, decode_source
from accy.dialects.accy import Accy
from accy.passes.analysis import AnalysisManager, Budget
from accy.passes.options import PlanOptions
from accy.passes.plan_passes import attach_analysis_manager
from accy.passes.registry import accy_passes
from accy.passes.workspace.registry import FamilyRegistry
from accy.plot import check_plot_path, plot_arena
from accy.reports import REPORTS
from accy.source import UPSTREAM_DIALECTS, parse, verify


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {value}")
    return value


class AccyOptMain(xDSLOptMain):
    """The opt driver of accy: accy's dialects and passes, located diagnostics."""

    def register_all_dialects(self) -> None:
        for dialect in (*UPSTREAM_DIALECTS, Accy):
            self.ctx.load_dialect(dialect)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--accy-max-work",
            type=_non_negative,
            metavar="N",
            help="structural visits the planning analyses may make; an analysis whose "
            "estimate does not fit is refused before it runs",
        )
        arg_parser.add_argument(
            "--accy-report",
            action="append",
            default=[],
            choices=sorted(REPORTS),
            help="print a plan report to stderr after the passes (repeatable)",
        )

        arg_parser.add_argument(
            "--accy-families",
            action="append",
            default=[],
            metavar="PATH",
            help="a kernel-family file searched before the package's (repeatable)",
        )
        arg_parser.add_argument(
            "--accy-arena-plot",
            metavar="FILE.png",
            help="draw each function's arena (buffers over time × address); needs matplotlib",
        )
        arg_parser.add_argument(
            "--import-stablehlo",
            action="store_true",
            help="read the input as StableHLO (e.g. JAX's lowered text) and import it "
            "into the accy dialect before the passes",
        )

    def register_all_passes(self) -> None:
        for name, factory in accy_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        """Only MLIR text: xDSL's other targets (assembly for other machines, LLVM IR
        from xDSL's own lowering) do not apply to accy's programs."""
        self.available_targets["mlir"] = lambda: MLIRTarget

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """Every input is MLIR text, whatever its file extension; `-` is standard input."""
        path = self.args.input_file
        if path is None or path == "-":
            return sys.stdin.buffer, "mlir"
        try:
            return open(path, "rb"), "mlir"
        except OSError as error:
            raise AccyError(f"cannot open input file '{path}': {error.strerror}") from None

    def get_input_name(self) -> str:
        path = self.args.input_file
        return "<stdin>" if path is None or path == "-" else path

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        return self.parse_text(self.read_chunk(chunk, start_offset), start_offset)

    def read_chunk(self, chunk: IO[bytes], start_offset: int) -> str:
        return decode_source(chunk.read(), self.get_input_name(), start_offset)

    def parse_text(self, text: str, start_offset: int) -> ModuleOp:
        if self.args.import_stablehlo:
            from accy.stablehlo import import_stablehlo

            return import_stablehlo(text, filename=self.get_input_name(), line_offset=start_offset)
        return parse(text, filename=self.get_input_name(), ctx=self.ctx, line_offset=start_offset)

    def setup_pipeline(self) -> None:
        """The pipeline of `-p`, verifying after each pass; `--print-between-passes`
        dumps the IR after each pass to stderr and `--time-passes` records each pass's
        time for a report after the run (both as mlir-opt does)."""
        self.pass_times: list[tuple[str, float]] = []
        started = time.perf_counter()

        def between(previous: ModulePass | None, module: ModuleOp, _next: object) -> None:
            nonlocal started
            if previous is not None:
                self.pass_times.append((previous.name, time.perf_counter() - started))
            if previous is not None and not self.args.disable_verify:  # parse verified
                verify(module)
            if previous is not None and self.args.print_between_passes:
                print(f"// -----// IR Dump After {previous.name} //----- //", file=sys.stderr)
                print(self.output_resulting_program(module), file=sys.stderr)
            started = time.perf_counter()

        try:
            self.pipeline = PassPipeline.parse_spec(
                self.available_passes, self.args.passes, between
            )
        except (ValueError, TypeError, ArgSpecParseError) as error:
            # xDSL's message may draw the spec with a caret; keep its last line, the reason.
            reason = str(error).strip().splitlines()[-1].strip()
            raise AccyError(f"invalid pass pipeline '{self.args.passes}': {reason}") from None

    def prepare_output(self) -> IO[str]:
        """Output is collected and written only when every chunk succeeded."""
        return StringIO()

    def write_output(self, text: str) -> None:
        if self.args.output_file is None:
            sys.stdout.write(text)
            return
        try:
            Path(self.args.output_file).write_text(text)
        except OSError as error:
            raise AccyError(
                f"cannot write output file '{self.args.output_file}': {error.strerror}"
            ) from None

    def apply_passes(self, prog: ModuleOp) -> None:
        options = PlanOptions(families=tuple(Path(p) for p in self.args.accy_families))
        if options.families:
            FamilyRegistry.load(options.families)  # a bad file is an error even if unused
        if self.args.accy_arena_plot:
            check_plot_path(Path(self.args.accy_arena_plot))
        manager = AnalysisManager(Budget(structural_visits=self.args.accy_max_work), options)
        attach_analysis_manager(prog, manager)
        super().apply_passes(prog)
        if self.args.time_passes:
            print(pass_timing_report(self.pass_times), file=sys.stderr)
        for report in self.args.accy_report:
            print(REPORTS[report](prog, manager), file=sys.stderr)
        if self.args.accy_arena_plot:
            plot_arena(prog, manager, Path(self.args.accy_arena_plot))

    def run(self) -> None:
        """Each chunk is parsed, transformed and printed; the output is written only when
        every chunk succeeded. With `--verify-diagnostics` each chunk's error is checked
        against the chunk's `expected-error` annotations (`expected_diagnostics`) and the
        run fails on any mismatch."""
        chunks, _ = self.prepare_input()
        output = self.prepare_output()
        problems: list[str] = []
        for index, (chunk, offset) in enumerate(chunks):
            if index > 0:
                output.write("// -----\n")
            try:
                text = self.read_chunk(chunk, offset)
            finally:
                chunk.close()
            expectations = []
            if self.args.verify_diagnostics:
                expectations = parse_expectations(text, self.get_input_name(), offset)
            produced = None
            try:
                module = self.parse_text(text, offset)
                self.apply_passes(module)
                output.write(self.output_resulting_program(module))
            except AccyError as error:
                if not self.args.verify_diagnostics:
                    raise
                produced = error
            if self.args.verify_diagnostics:
                problems += check_expectations(expectations, produced, self.get_input_name())
        if problems:
            raise DiagnosticsMismatch(problems)
        self.write_output(output.getvalue())


class DiagnosticsMismatch(AccyError):
    """`--verify-diagnostics` found errors that were not expected or expected errors that
    were not produced; its diagnostic lists every one."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))

    def diagnostic(self) -> str:
        return self.message


def pass_timing_report(times: list[tuple[str, float]]) -> str:
    """mlir-opt's `--mlir-timing` report: wall time per pass and the total."""
    total = sum(seconds for _, seconds in times)
    lines = [
        "===" + "-" * 73 + "===",
        "... Pass execution timing report ...".center(79),
        "===" + "-" * 73 + "===",
        f"  Total Execution Time: {total:.4f} seconds",
        "",
        "  ----Wall Time----  ----Name----",
    ]
    for name, seconds in times:
        share = 100 * seconds / total if total else 0.0
        lines.append(f"  {seconds:8.4f} ({share:5.1f}%)  {name}")
    lines.append(f"  {total:8.4f} (100.0%)  Total")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    try:
        AccyOptMain(description="accy modular optimizer driver", args=argv).run()
    except AccyError as error:
        print(error.diagnostic(), file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:
        # The reader went away (`accy-opt ... | head`): not an error of ours.
        sys.stderr.close()
        sys.exit(0)
    except SystemExit as exit_:
        # argparse reports a bad command line with status 2; accy uses 1 for user errors.
        sys.exit(1 if exit_.code == 2 else exit_.code)


if __name__ == "__main__":
    main()
