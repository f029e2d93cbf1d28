/**
 * autocomplete: suggest corpus entries that start with a typed prefix.
 *
 * The corpus (corpus.txt, shipped in the action archive) is read and sorted once per process,
 * at the first invocation, so a cold start pays for loading it and warm invocations only search.
 * A search is two binary searches over the lower-cased keys.
 * Input: `term` (the prefix; also read from a web action's query string `__ow_query`), optional
 * `limit` (0 to 100000, default 10; "5" as a string too). Output: the term, the total number of
 * matches and the first `limit`.
 */
"use strict";

const fs = require("fs");
const path = require("path");

let index = null;

function loadIndex() {
  const text = fs.readFileSync(path.join(__dirname, "corpus.txt"), "utf8");
  const entries = text.split("\n").map((line) => line.trim()).filter(Boolean);
  const pairs = entries.map((entry) => [entry.toLowerCase(), entry]);
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { keys: pairs.map((p) => p[0]), values: pairs.map((p) => p[1]) };
}

function lowerBound(keys, target) {
  let lo = 0, hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] < target) lo = mid + 1; else hi = mid;
  }
  return lo;
}

const MAX_LIMIT = 100000;

function termFrom(params) {
  if (typeof params.term === "string") return params.term;
  if (typeof params.__ow_query === "string") {
    const match = /(?:^|&)term=([^&]*)/.exec(params.__ow_query);
    if (match) return decodeURIComponent(match[1].replace(/\+/g, " "));
  }
  return null;
}

function main(params) {
  params = params || {};
  const term = termFrom(params);
  if (term === null) {
    return { error: "no term: pass the prefix to complete in the 'term' parameter" };
  }
  // A limit may arrive as a string ("5" from a CLI or a query string); missing or null: 10.
  let limit = 10;
  if (params.limit !== undefined && params.limit !== null) {
    limit = typeof params.limit === "string" && params.limit.trim() !== "" ? Number(params.limit) : params.limit;
    if (!Number.isInteger(limit) || limit < 0 || limit > MAX_LIMIT) {
      return { error: "limit: expected a whole number from 0 to " + MAX_LIMIT + " (got " + JSON.stringify(params.limit) + ")" };
    }
  }
  const cold = index === null;
  if (cold) index = loadIndex();
  const prefix = term.toLowerCase();
  const start = lowerBound(index.keys, prefix);
  // Every key with the prefix sorts before prefix + U+FFFF.
  const end = lowerBound(index.keys, prefix + "\uffff");
  return {
    term: term,
    matches: end - start,
    suggestions: index.values.slice(start, Math.min(end, start + limit)),
    corpus_size: index.keys.length,
    index_loaded_now: cold,
  };
}

exports.main = main;
