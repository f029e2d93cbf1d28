/**
 * Native runner for a Node.js function: require it once, then call `main` once per request.
 *
 * Usage: `node node_runner.js FUNCTION_DIR MAIN_NAME` with env FAASPROF_RESULT_FD (a pipe to the
 * parent). The entry file is package.json's `main` (default index.js), as OpenWhisk's Node.js
 * runtime resolves zip actions. Requests arrive one JSON object per line on stdin
 * (`{"params": {...}}`); answers are JSON lines on the result pipe (the first one is
 * `{"ready": true, "load_ns": ...}`). Each answer carries `exec_ns` (hrtime around `main`,
 * including its promise) and `rusage` deltas from process.resourceUsage(). This file imports
 * nothing of faasprof.
 */
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

const resultFd = Number(process.env.FAASPROF_RESULT_FD);

function send(text) {
  const buffer = Buffer.from(text + "\n", "utf8");
  let offset = 0;
  while (offset < buffer.length) {
    offset += fs.writeSync(resultFd, buffer, offset, buffer.length - offset);
  }
}

function usageDelta(before, after) {
  return {
    user_ms: (after.userCPUTime - before.userCPUTime) / 1000,
    sys_ms: (after.systemCPUTime - before.systemCPUTime) / 1000,
    minflt: after.minorPageFault - before.minorPageFault,
    majflt: after.majorPageFault - before.majorPageFault,
    nvcsw: after.voluntaryContextSwitches - before.voluntaryContextSwitches,
    nivcsw: after.involuntaryContextSwitches - before.involuntaryContextSwitches,
  };
}

async function serve() {
  const dir = path.resolve(process.argv[2]);
  const mainName = process.argv[3] || "main";
  const start = process.hrtime.bigint();
  let fn;
  try {
    let entry = "index.js";
    const pkgPath = path.join(dir, "package.json");
    if (fs.existsSync(pkgPath)) {
      entry = JSON.parse(fs.readFileSync(pkgPath, "utf8")).main || entry;
    }
    const mod = require(path.join(dir, entry));
    fn = mod[mainName];
    if (typeof fn !== "function") throw new Error(`${entry} does not export ${mainName}`);
  } catch (err) {
    send(JSON.stringify({ ready: false, error: String(err && err.message ? err.message : err), traceback: String(err && err.stack) }));
    process.exit(1);
  }
  send(JSON.stringify({ ready: true, load_ns: Number(process.hrtime.bigint() - start), pid: process.pid, interpreter: process.version }));

  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const params = JSON.parse(line).params || {};
    const before = process.resourceUsage();
    const begin = process.hrtime.bigint();
    let result = null;
    let error = null;
    try {
      result = await fn(params);
    } catch (err) {
      error = `${err && err.name ? err.name : "Error"}: ${err && err.message ? err.message : err}`;
    }
    const execNs = Number(process.hrtime.bigint() - begin);
    const usage = usageDelta(before, process.resourceUsage());
    if (error === null && (result === null || typeof result !== "object")) {
      error = `the function did not return a dictionary (got ${result === null ? "null" : typeof result})`;
    }
    if (error === null && !Array.isArray(result) && Object.prototype.hasOwnProperty.call(result, "error")) {
      error = String(typeof result.error === "string" ? result.error : JSON.stringify(result.error));
    }
    let text = "null";
    try {
      text = JSON.stringify(result === undefined ? null : result);
    } catch (err) {
      error = "the result is not JSON-serialisable: " + err.message;
    }
    send(`{"ok": ${error === null}, "error": ${JSON.stringify(error)}, "exec_ns": ${execNs}, "rusage": ${JSON.stringify(usage)}, "result_bytes": ${Buffer.byteLength(text)}, "result": ${text}}`);
  }
}

serve();
