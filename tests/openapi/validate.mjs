// Checks recorded responses of the GitHub test server against GitHub's published OpenAPI
// description (npm `@octokit/openapi`, `generated/api.github.com.json`).
//
// Usage: node tests/openapi/validate.mjs <dir>
//
// <dir> holds one JSON file per response: {method, route_template, status, body}, where
// route_template is the OpenAPI path (`/repos/{owner}/{repo}/issues/{issue_number}`) and body is
// the parsed JSON body or null. Exits 0 when every response conforms, 1 listing every mismatch,
// 2 on a usage or setup error.
//
// How a response is matched to a schema:
// - the operation's own response for that status (following `$ref`s to components/responses);
// - 204 and 304 must have no body;
// - an error status the operation does not list (401, a rate-limit 403, 502, an unknown route)
//   is checked against `basic-error`, the shape GitHub sends for every error;
// - any other status the operation does not list is itself a mismatch;
// - each issue event is also checked against the schema named for its `event`
//   (`labeled-issue-event`, ...), since the description's `anyOf` of events has no
//   discriminator and would let a `labeled` event without its `label` pass.
//
// OpenAPI 3.0 is not JSON Schema: `nullable: true` is translated into a `null` type (or an
// `anyOf` with `{type: "null"}` where the schema has no `type`), and boolean
// `exclusiveMinimum`/`exclusiveMaximum` into draft-07 numbers. Keywords ajv does not know
// (`example`, `discriminator`, `x-*`, ...) are ignored (`strict: false`).

import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

import Ajv from "ajv";
import addFormats from "ajv-formats";

const require = createRequire(import.meta.url);
const DOC_ID = "https://api.github.com/openapi.json";

function usage(message) {
  console.error(`validate.mjs: ${message}`);
  console.error("usage: node tests/openapi/validate.mjs <dir of recorded responses>");
  process.exit(2);
}

const dir = process.argv[2];
if (!dir) usage("no directory given");

let files;
try {
  files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
} catch (e) {
  usage(`cannot read ${dir}: ${e.message}`);
}
if (files.length === 0) usage(`${dir} holds no recorded responses (*.json)`);

const doc = require("@octokit/openapi/generated/api.github.com.json");
translate(doc.components);
translate(doc.paths);

const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
// Formats GitHub's description uses that JSON Schema lacks (OpenAPI's numeric ones and a few of
// GitHub's own): annotations only. `uri`, `date-time`, `date`, `email`, `uri-template` are checked.
for (const f of ["int32", "int64", "double", "binary", "repo.nwo", "timestamp"]) {
  ajv.addFormat(f, true);
}
ajv.addSchema(doc, DOC_ID);

const EVENTS = "/repos/{owner}/{repo}/issues/{issue_number}/events";
const EVENT_SCHEMAS = { closed: "state-change-issue-event", reopened: "state-change-issue-event" };

const mismatches = [];
const compiled = new Map();
let checked = 0;

for (const file of files) {
  const path = join(dir, file);
  let rec;
  try {
    rec = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    mismatches.push(`${file}: not a recorded response: ${e.message}`);
    continue;
  }
  const { method, route_template: route, status, body } = rec;
  const where = `${method} ${route} -> ${status} (${file})`;
  const located = locate(method, route, status);
  if (located.error) {
    mismatches.push(`${where}: ${located.error}`);
    continue;
  }
  if (located.noBody) {
    if (body !== null && body !== undefined && body !== "") {
      mismatches.push(`${where}: a ${status} has no body, got ${JSON.stringify(body).slice(0, 120)}`);
    }
    checked += 1;
    continue;
  }
  let validate;
  try {
    validate = schema(located.pointer);
  } catch (e) {
    mismatches.push(`${where}: cannot compile schema ${located.pointer}: ${e.message}`);
    continue;
  }
  checked += 1;
  report(where, validate, body, located.name, "");
  // The description's issue events are an `anyOf` with no discriminator: a `labeled` event
  // without its `label` still matches a project-card branch. Check each event against the
  // schema named for its `event` too.
  if (route === EVENTS && status === 200 && Array.isArray(body)) {
    body.forEach((item, i) => {
      const name = EVENT_SCHEMAS[item && item.event] ?? `${item && item.event}-issue-event`;
      if (!doc.components.schemas[name]) return;
      report(where, schema(`/components/schemas/${name}`), item, name, `/${i}`);
    });
  }
}

if (mismatches.length) {
  console.error(`${mismatches.length} mismatch(es) with GitHub's OpenAPI description (${checked} responses checked):`);
  for (const m of mismatches) console.error(`  ${m}`);
  process.exit(1);
}
console.log(`all ${checked} recorded responses match GitHub's OpenAPI description (@octokit/openapi ${require("@octokit/openapi/package.json").version})`);

/** The validator for the schema at `pointer` in the description, compiled once. */
function schema(pointer) {
  let validate = compiled.get(pointer);
  if (!validate) {
    validate = ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
    compiled.set(pointer, validate);
  }
  return validate;
}

/** Validates `value`; records each error, its instance path under `prefix`. */
function report(where, validate, value, name, prefix) {
  if (validate(value)) return;
  for (const err of prune(validate.errors)) {
    const params = Object.keys(err.params).length ? ` ${JSON.stringify(err.params)}` : "";
    mismatches.push(`${where}: at '${prefix}${err.instancePath}' ${err.message}${params} [schema ${name}]`.replace("at ''", "at '/'"));
  }
}

/** The JSON pointer (in `doc`) of the schema a response must match, or why there is none. */
function locate(method, route, status) {
  const code = String(status);
  if (code === "204" || code === "304") return { noBody: true };
  const item = doc.paths[route];
  const op = item && item[String(method).toLowerCase()];
  let pointer = null;
  let name = null;
  if (op && op.responses && op.responses[code]) {
    pointer = `/paths/${esc(route)}/${String(method).toLowerCase()}/responses/${code}`;
    let response = op.responses[code];
    while (response.$ref) {
      pointer = response.$ref.slice(1);
      response = resolve(response.$ref);
    }
    const content = response.content && response.content["application/json"];
    if (!content) return { error: `the description gives ${code} no JSON body` };
    pointer += "/content/application~1json/schema";
    name = content.schema.$ref ? content.schema.$ref.split("/").pop() : `${route} ${code}`;
    return { pointer, name };
  }
  if (Number(status) >= 400) {
    return { pointer: "/components/schemas/basic-error", name: "basic-error" };
  }
  if (!item) return { error: `no such path in the description: ${route}` };
  if (!op) return { error: `the description has no ${method} for ${route}` };
  return { error: `the description lists no ${code} for ${method} ${route} (it lists ${Object.keys(op.responses).join(", ")})` };
}

function resolve(ref) {
  return ref
    .slice(2)
    .split("/")
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((o, k) => o[k], doc);
}

function esc(segment) {
  return segment.replace(/~/g, "~0").replace(/\//g, "~1");
}

/**
 * Drops duplicates, and shortens a failed anyOf/oneOf: ajv reports why every branch failed,
 * which for GitHub's 26-branch issue events is noise; keep the first few and say how many more.
 */
function prune(errors) {
  const seen = new Set();
  const unique = errors.filter((e) => {
    const key = `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const branchy = unique.filter((e) => e.keyword === "anyOf" || e.keyword === "oneOf");
  const out = [];
  const dropped = new Map();
  for (const e of unique) {
    if (e.keyword === "anyOf" || e.keyword === "oneOf") continue;
    const under = branchy.find((b) => e.instancePath.startsWith(b.instancePath));
    if (under) {
      const n = dropped.get(under) ?? 0;
      dropped.set(under, n + 1);
      if (n >= 3) continue;
    }
    out.push(e);
  }
  for (const b of branchy) {
    const n = dropped.get(b) ?? 0;
    const more = n > 3 ? ` (${n - 3} more branch errors not shown)` : "";
    out.push({ ...b, message: `${b.message}${more}`, params: {} });
  }
  return out;
}

/** Rewrites OpenAPI 3.0 schema keywords into their JSON Schema (draft-07) meaning, in place. */
function translate(node) {
  if (Array.isArray(node)) {
    for (const item of node) translate(item);
    return;
  }
  if (!node || typeof node !== "object") return;
  for (const [key, value] of Object.entries(node)) {
    // Examples are data, not schemas: a `nullable` key in one means nothing.
    if (key === "example" || key === "examples") continue;
    translate(value);
  }
  for (const k of ["exclusiveMinimum", "exclusiveMaximum"]) {
    if (typeof node[k] === "boolean") {
      const bound = k === "exclusiveMinimum" ? "minimum" : "maximum";
      if (node[k] && typeof node[bound] === "number") {
        node[k] = node[bound];
        delete node[bound];
      } else {
        delete node[k];
      }
    }
  }
  if (node.nullable === true) {
    delete node.nullable;
    if (typeof node.type === "string") {
      node.type = [node.type, "null"];
      if (Array.isArray(node.enum) && !node.enum.includes(null)) node.enum.push(null);
    } else if (Array.isArray(node.type)) {
      if (!node.type.includes("null")) node.type.push("null");
    } else {
      const inner = { ...node };
      for (const k of Object.keys(node)) delete node[k];
      node.anyOf = [inner, { type: "null" }];
    }
  } else if (node.nullable === false) {
    delete node.nullable;
  }
}
