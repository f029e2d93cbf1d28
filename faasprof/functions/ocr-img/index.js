/**
 * ocr-img: recognise the text in one image by running the `tesseract` binary on it.
 *
 * The binary must be where the action runs (the tesseract-ocr OS package; ./setup.sh installs
 * it for localwhisk and native runs; a real OpenWhisk needs a runtime image that has it).
 * Input: the image as base64 in `image`, or as the raw body of a web action (`__ow_body`), or in
 * `data`; optional `lang` (default "eng"). Output: the text, its words and the tesseract version.
 */
"use strict";

const { execFile } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

// Action processes may start with an empty PATH (OpenWhisk's action loop passes none), so look
// in the usual places as well.
const SEARCH_DIRS = (process.env.PATH || "").split(path.delimiter).filter(Boolean)
  .concat(["/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"]);

function findTesseract() {
  for (const dir of SEARCH_DIRS) {
    const candidate = path.join(dir, "tesseract");
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch (err) {
      // not here
    }
  }
  return null;
}

function run(binary, args) {
  return new Promise((resolve) => {
    execFile(binary, args, { maxBuffer: 16 * 1024 * 1024, env: Object.assign({ OMP_THREAD_LIMIT: "1" }, process.env) },
      (err, stdout, stderr) => resolve({ err, stdout, stderr }));
  });
}

async function main(params) {
  params = params || {};
  const encoded = params.image || params.__ow_body || params.data;
  if (!encoded || typeof encoded !== "string") {
    return { error: "no image: pass it base64-encoded in the 'image' parameter (or as a web action body)" };
  }
  const tesseract = findTesseract();
  if (!tesseract) {
    return { error: "tesseract binary not found; install the tesseract-ocr OS package (apt-get install tesseract-ocr, or ./setup.sh)" };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ocr-img-"));
  const input = path.join(dir, "input");
  try {
    fs.writeFileSync(input, Buffer.from(encoded, "base64"));
    const result = await run(tesseract, [input, "stdout", "-l", String(params.lang || "eng")]);
    if (result.err) {
      return { error: "tesseract failed: " + (result.stderr || result.err.message).trim().split("\n").pop() };
    }
    const text = result.stdout.trim();
    const version = await run(tesseract, ["--version"]);
    return {
      text: text,
      words: text.split(/\s+/).filter(Boolean),
      tesseract: (version.stdout || version.stderr || "").split("\n")[0].trim(),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

exports.main = main;
