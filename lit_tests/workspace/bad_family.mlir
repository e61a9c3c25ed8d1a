// RUN: not accy-opt %s --accy-target=cuda --accy-families=%S/Inputs/bad.toml -p accy-size-workspaces 2>&1 | filecheck %s
// RUN: not accy-opt %s --accy-target=cuda --accy-families=%S/Inputs/bad.toml --accy-report=arena 2>&1 | filecheck %s
// RUN: not accy-opt %s --accy-target=cuda -p 'accy-size-workspaces{families="%S/Inputs/bad.toml"}' 2>&1 | filecheck %s
// RUN: not accy-opt %s --accy-target=cuda --accy-families=%S/Inputs/syntax.toml -p accy-size-workspaces 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not accy-opt %s --accy-target=cuda --accy-families=%S/Inputs/unknown_name.toml -p accy-size-workspaces 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not accy-opt %s --accy-target=cuda --accy-families=%S/Inputs/missing.toml -p accy-size-workspaces 2>&1 | filecheck %s --check-prefix=MISSING

// A malformed user family file is one located diagnostic, FILE:LINE:COL: error: ...,
// and exit status 1 (`not`), with no traceback — whichever of the family flag, a report
// or the pass option brings it in.

// Inputs/bad.toml line 15, column 3 (the key is indented): `  arena = "yes"`.
// CHECK:     {{.*}}Inputs/bad.toml:15:3: error: family 'reduce.mine' workspace 'flags': 'arena' must be a boolean, got a string
// CHECK-NOT: Traceback

// TOML syntax: tomllib's message, at the position it gives (here the end of the file).
// SYNTAX:     {{.*}}Inputs/syntax.toml:4:1: error: Unclosed array
// SYNTAX-NOT: Traceback

// A well-formed file whose expression reads an unknown name: the error names the
// family, the workspace and the name, at the work item that ran the family (line 30
// below), never a size of 0.
// NAME:     {{.*}}bad_family.mlir:30:3: error: family 'reduce.mine' workspace 'scratch': at column 5: unknown name 'd_modle'
// NAME-NOT: Traceback

// MISSING:     {{.*}}Inputs/missing.toml:1:1: error: cannot read family file: {{.*}}No such file or directory
// MISSING-NOT: Traceback

func.func @f(%a: tensor<4x300xf32>) -> tensor<4xf32> {
  %0 = accy.reduce add %a, dims = [1] : (tensor<4x300xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
