"""`accy-opt`: xDSL's opt driver with the accy dialect and accy's passes.

Every user mistake (bad syntax, a verifier failure, an unknown pass, a bad pass option, a
missing file) prints one diagnostic, `file:line:col: error: ...` where a location exists
or `error: ...` otherwise, and exits with status 1. `--verify-diagnostics` checks the
errors against the input's `expected-error` annotations, as mlir-opt does
(`accy.cli.expected_diagnostics`), and fails on any mismatch. The only target is MLIR text.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import sys
import time
import typing
from collections.abc import Callable, Sequence
from io import StringIO
from pathlib import Path
from typing import IO, Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from accy.cli.arguments import Integer
from accy.cli.expected_diagnostics import check_expectations, parse_expectations
from accy.diagnostics import AccyError, StableHloTextError, decode_source
from accy.dialects.dialect import Accy
from accy.passes.analysis import AnalysisManager, Budget
from accy.passes.options import PlanOptions
from accy.passes.plan_passes import attach_analysis_manager
from accy.passes.registry import accy_passes
from accy.source import UPSTREAM_DIALECTS, parse, verify

# Start-up time: everything imported above is needed to parse and print a program. The
# planning analyses (`accy.reports`, `accy.plot`, the kernel-family registry), the
# lowering and their numeric dependencies are imported where a pass or an option uses
# them (`apply_passes`, `--list-passes`), so that `accy-opt --version` or a plain
# parse-and-print does not pay for them.

REPORT_NAMES: tuple[str, ...] = (
    "arena",
    "buffers",
    "fusion",
    "memory",
    "schedule",
    "shapes",
    "workspaces",
)
"""The names of `accy.reports.REPORTS`, sorted, for `--accy-report`'s choices without
importing the reports (and the analyses) at start-up; a test keeps the two equal."""

NO_PASSES_NOTE = (
    "accy-opt: no passes given (-p): the input is parsed, verified and printed; "
    "--list-passes shows the passes"
)


_KIND_WORDS = {int: ("an integer", "integers"), float: ("a number", "numbers"),
               str: ("a string", "strings"), bool: ("true or false", "true or false")}  # fmt: skip
"""How a pass option's kind is named: (one value, values separated by commas)."""


def _mistyped_option(available: dict[str, Callable[[], type[ModulePass]]], spec: str) -> str | None:
    """Which option of `spec` has a value of the wrong kind, in words ("option 'rows' of
    accy-size-workspaces takes integers separated by commas, not abc"); None if none has.
    An option's kinds are its annotation's (`int | float | None`: an integer or a number;
    `tuple[int, ...]`: integers)."""
    for pass_spec in parse_pipeline(spec):
        hints = typing.get_type_hints(available[pass_spec.name]())
        for name, values in pass_spec.parameters.items():
            hint = hints.get(name.replace("-", "_"))
            kinds = [k for k in typing.get_args(hint) or (hint,) if k is not type(None)]
            takes = []  # (element type, many) per kind
            for kind in kinds:
                many = typing.get_origin(kind) is tuple
                element = typing.get_args(kind)[0] if many else kind
                if isinstance(element, type):
                    takes.append((element, many))
            if not takes or any(
                (many or len(values) == 1) and all(type(v) is element for v in values)
                for element, many in takes
            ):
                continue
            if (float, False) in takes:  # an integer is a number
                takes = [t for t in takes if t != (int, False)]
            words = " or ".join(
                f"{_KIND_WORDS.get(e, (e.__name__,) * 2)[1]} separated by commas"
                if many
                else _KIND_WORDS.get(e, (e.__name__,) * 2)[0]
                for e, many in takes
            )
            given = ",".join(str(v).lower() if type(v) is bool else str(v) for v in values)
            return f"option '{name}' of {pass_spec.name} takes {words}, not {given or 'nothing'}"
    return None


class AccyOptMain(xDSLOptMain):
    """The opt driver of accy: accy's dialects and passes, located diagnostics."""

    def register_all_dialects(self) -> None:
        for dialect in (*UPSTREAM_DIALECTS, Accy):
            self.ctx.load_dialect(dialect)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        # xDSL's `--shrink` (for the shrinkray reducer) means nothing here: accy-opt's
        # `run` never reports "can shrink"; xDSL's `--version` names xdsl-opt; a parse
        # error is a diagnostic with or without `--parsing-diagnostics` (xDSL's prints it
        # and exits 0), which `--verify-diagnostics` checks.
        _remove_arguments(arg_parser, ("shrink", "version", "parsing_diagnostics"))
        verify_action = _find_action(arg_parser, "verify_diagnostics")
        if verify_action is not None:
            verify_action.help = (
                "check each chunk's error against its `// expected-error {{...}}` "
                "annotations (@+N, @-N, @above, @below, @unknown) as mlir-opt does; "
                "exit 0 when they match, 1 on a mismatch"
            )
        passes_action = _find_action(arg_parser, "passes")
        if passes_action is not None:
            passes_action.help = (  # the flag first: the pass names wrap at their hyphens
                "`--list-passes` lists the passes with their options (a pass's options go "
                f"in braces: -p 'accy-plan-arena{{alignment=128}}'). {passes_action.help}"
            )
        arg_parser.add_argument(
            "-v",
            "--version",
            action=AccyVersionAction,
            help="print accy's version and the xDSL version it uses, and exit",
        )
        arg_parser.add_argument(
            "--list-passes",
            action=ListPassesAction,
            passes=self.available_passes,
            help="list the passes with their descriptions and options, and exit",
        )
        arg_parser.add_argument(
            "--accy-max-work",
            type=Integer(minimum=0),
            metavar="N",
            help="structural visits the planning analyses may make; an analysis whose "
            "estimate does not fit is refused before it runs",
        )
        arg_parser.add_argument(
            "--accy-report",
            action="append",
            default=[],
            choices=REPORT_NAMES,
            help="print a plan report to stderr after the passes (repeatable)",
        )

        arg_parser.add_argument(
            "--accy-target",
            default=None,
            metavar="NAME",
            help="the target the pipeline plans and lowers for (default cpu); a pass's own "
            "target option overrides it",
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
        try:
            return parse(
                text, filename=self.get_input_name(), ctx=self.ctx, line_offset=start_offset
            )
        except StableHloTextError as error:
            raise error.with_remedy("--import-stablehlo") from None

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
            if reason.startswith("Incompatible types"):  # xDSL names the Python type only
                reason = _mistyped_option(self.available_passes, self.args.passes) or reason
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
        given = {"target": self.args.accy_target} if self.args.accy_target else {}
        options = PlanOptions(families=tuple(Path(p) for p in self.args.accy_families), **given)
        if options.families:
            from accy.passes.families import FamilyRegistry

            FamilyRegistry.load(options.families)  # a bad file is an error even if unused
        if self.args.accy_arena_plot:
            from accy.plot import check_plot_path

            check_plot_path(Path(self.args.accy_arena_plot))
        manager = AnalysisManager(Budget(structural_visits=self.args.accy_max_work), options)
        attach_analysis_manager(self.ctx, prog, manager)
        super().apply_passes(prog)
        if self.args.time_passes:
            print(pass_timing_report(self.pass_times), file=sys.stderr)
        if self.args.accy_report:
            from accy.reports import REPORTS

            for report in self.args.accy_report:
                print(REPORTS[report](prog, manager), file=sys.stderr)
        if self.args.accy_arena_plot:
            from accy.plot import plot_arena

            plot_arena(prog, manager, Path(self.args.accy_arena_plot))

    def run(self) -> None:
        """Each chunk is parsed, transformed and printed; the output is written only when
        every chunk succeeded. With `--verify-diagnostics` each chunk's error is checked
        against the chunk's `expected-error` annotations (`expected_diagnostics`) and the
        run fails on any mismatch."""
        if wants_no_passes_note(self.args.passes, sys.stderr):
            print(NO_PASSES_NOTE, file=sys.stderr)
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


def wants_no_passes_note(passes: str, stderr: IO[str]) -> bool:
    """Whether to say that nothing but parse, verify and print runs: no `-p` pass is given
    and `stderr` is a terminal (a pipe, a file or a test's capture stays clean)."""
    if passes.strip():
        return False
    try:
        return stderr.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _find_action(parser: argparse.ArgumentParser, dest: str) -> argparse.Action | None:
    return next((a for a in parser._actions if a.dest == dest), None)


def _remove_arguments(parser: argparse.ArgumentParser, dests: Sequence[str]) -> None:
    """Drop the arguments of `dests` from `parser`: its option strings, its action list and
    its group's list (the help), so they are neither accepted nor shown."""
    for dest in dests:
        action = _find_action(parser, dest)
        if action is None:
            continue
        parser._remove_action(action)
        for option in action.option_strings:
            parser._option_string_actions.pop(option, None)
        for group in parser._action_groups:
            if action in group._group_actions:
                group._group_actions.remove(action)
        if dest in parser._defaults:
            del parser._defaults[dest]


def version_text() -> str:
    """`accy-opt --version`: accy's version and the xDSL version it runs on."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "unknown"

    return f"accy-opt from accy {installed('accy')}, built on xDSL {installed('xdsl')}"


class AccyVersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(version_text())
        parser.exit()


class ListPassesAction(argparse.Action):
    """`--list-passes`: prints `pass_listing` of the registered passes and exits."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        passes: dict[str, Callable[[], type[ModulePass]]],
        **kwargs: Any,
    ):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.passes = passes

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(pass_listing({name: factory() for name, factory in self.passes.items()}))
        parser.exit()


def _summary(doc: str) -> str:
    """The one-line description of a pass: the first sentence of its docstring's first
    paragraph (a docstring's first line often ends mid-sentence)."""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


def _option_help(doc: str) -> dict[str, str]:
    """The `Options:` section of a pass docstring (`- name: text`, continued on indented
    lines), by option name."""
    helps: dict[str, str] = {}
    current: str | None = None
    in_options = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped == "Options:":
            in_options = True
            continue
        if not in_options:
            continue
        if stripped.startswith("- ") and ":" in stripped:
            current, text = stripped[2:].split(":", 1)
            current = current.strip()
            helps[current] = text.strip()
        elif stripped and current is not None:
            helps[current] += " " + stripped
        elif not stripped and current is not None:
            in_options = False
    return helps


def _format_default(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(_format_default(v) for v in value)
    return str(value)


def pass_listing(passes: dict[str, type[ModulePass]]) -> str:
    """Each pass with its description and its options (`name=<type>`, the default, the
    docstring's text for it), as `mlir-opt --help` lists pass options."""
    lines = ["Available passes (-p NAME or -p 'NAME{option=value ...}', comma-separated):"]
    for name in sorted(passes):
        cls = passes[name]
        doc = inspect.getdoc(cls) or ""
        lines.append(f"  {name}")
        if doc:
            lines.append(f"      {_summary(doc)}")
        helps = _option_help(doc)
        for field in dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ():
            option = field.name.replace("_", "-")
            kind = (
                field.type
                if isinstance(field.type, str)
                else getattr(field.type, "__name__", str(field.type))
            )
            if field.default is not dataclasses.MISSING:
                default = _format_default(field.default)
            elif field.default_factory is not dataclasses.MISSING:
                default = _format_default(field.default_factory())
            else:
                default = "required"
            lines.append(f"      {option}=<{kind}>  (default: {default})")
            text = helps.get(option) or helps.get(field.name)
            if text:
                lines.append(f"          {text}")
    return "\n".join(lines)


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
