"""regex: text processing with regular expressions over a generated corpus of ``size`` lines
(log-like lines with dates, e-mail addresses, URLs, numbers and words).

Input: ``{"size": 3000}`` (lines; optional). Output: counts of each kind of match, the most
frequent words, and the number of substitutions made by an anonymising pass.
"""

import re

from paramlib import int_param

DEFAULT_SIZE = 3000

WORDS = (
    "alpha beta gamma delta kernel cache miss branch predictor function container cold warm "
    "request latency invoke action memory socket thread queue"
).split()
DOMAINS = ("example.org", "mail.example.com", "lab.test", "uni.example.edu")

DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
URL = re.compile(r"https?://[^\s/]+(?:/[^\s]*)?")
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
WORD = re.compile(r"\b[a-z]{4,}\b")


def make_corpus(lines):
    """Deterministic log-like text; every construct appears at a known rate."""
    out = []
    for i in range(lines):
        w1, w2, w3 = WORDS[i % len(WORDS)], WORDS[(i * 7) % len(WORDS)], WORDS[(i * 13) % len(WORDS)]
        line = "%04d-%02d-%02d %s %s took %d.%02d ms" % (2020 + i % 5, 1 + i % 12, 1 + i % 28, w1, w2, i % 997, i % 100)
        if i % 3 == 0:
            line += " user%d@%s" % (i, DOMAINS[i % len(DOMAINS)])
        if i % 5 == 0:
            line += " see https://%s/runs/%d?%s=1" % (DOMAINS[i % len(DOMAINS)], i, w3)
        if i % 7 == 0:
            line += " retry -%d" % (i % 9)
        out.append(line)
    return "\n".join(out)


def main(args):
    try:
        lines = int_param(args, "size", DEFAULT_SIZE, 0, 1000000)
    except ValueError as error:
        return {"error": str(error)}
    text = make_corpus(lines)
    dates = DATE.findall(text)
    years = {}
    for year, _, _ in dates:
        years[year] = years.get(year, 0) + 1
    counts = {}
    for word in WORD.findall(text):
        counts[word] = counts.get(word, 0) + 1
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:5]
    anonymised, substitutions = EMAIL.subn("<email>", text)
    return {
        "benchmark": "regex",
        "size": lines,
        "dates": len(dates),
        "years": dict(sorted(years.items())),
        "emails": len(EMAIL.findall(text)),
        "urls": len(URL.findall(text)),
        "numbers": len(NUMBER.findall(text)),
        "top_words": [list(item) for item in top],
        "substitutions": substitutions,
        "anonymised_bytes": len(anonymised),
    }
