"""`accy-opt`: xDSL's opt driver with the accy dialect and accy's passes.

Every user mistake (bad syntax, a verifier failure, an unknown pass, a bad pass option, a
missing file) prints one diagnostic, `file:line:col: error: ...` where a location exists
or `error: ...` otherwise, and exits with status 1. `--verify-diagnostics` prints the
diagnostic on stdout and exits with 0, for FileCheck tests of invalid input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from io import StringIO
from pathlib import Path
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from accy.diagnostics import AccyError
from accy.dialects.accy import Accy
from accy.passes.analysis import AnalysisManager, Budget
from accy.passes.options import PlanOptions
from accy.passes.plan_passes import attach_analysis_manager
from accy.passes.registry import accy_passes
from accy.passes.workspace.registry import FamilyRegistry
from accy.plot import plot_arena
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

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """Every input is MLIR text, whatever its file extension."""
        path = self.args.input_file
        if path is None:
            return sys.stdin.buffer, "mlir"
        try:
            return open(path, "rb"), "mlir"
        except OSError as error:
            raise AccyError(f"cannot open input file '{path}': {error.strerror}") from None

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        if self.args.import_stablehlo:
            from accy.stablehlo import import_stablehlo

            return import_stablehlo(
                chunk.read().decode(),
                filename=self.get_input_name(),
                line_offset=start_offset,
            )
        return parse(
            chunk.read().decode(),
            filename=self.get_input_name(),
            ctx=self.ctx,
            line_offset=start_offset,
        )

    def setup_pipeline(self) -> None:
        def verify_between(_previous: object, module: ModuleOp, _next: object) -> None:
            if not self.args.disable_verify:
                verify(module)

        try:
            self.pipeline = PassPipeline.parse_spec(
                self.available_passes, self.args.passes, verify_between
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
        manager = AnalysisManager(Budget(structural_visits=self.args.accy_max_work), options)
        attach_analysis_manager(prog, manager)
        super().apply_passes(prog)
        for report in self.args.accy_report:
            print(REPORTS[report](prog, manager), file=sys.stderr)
        if self.args.accy_arena_plot:
            plot_arena(prog, manager, Path(self.args.accy_arena_plot))

    def run(self) -> None:
        chunks, _ = self.prepare_input()
        output = self.prepare_output()
        for index, (chunk, offset) in enumerate(chunks):
            if index > 0:
                output.write("// -----\n")
            try:
                module = self.parse_chunk(chunk, "mlir", offset)
                self.apply_passes(module)
                output.write(self.output_resulting_program(module))
            except AccyError as error:
                if not self.args.verify_diagnostics:
                    raise
                output.write(error.diagnostic() + "\n")
            finally:
                chunk.close()
        self.write_output(output.getvalue())


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
