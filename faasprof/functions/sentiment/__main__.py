"""sentiment: lexicon-based sentiment of an English text, sentence by sentence.

The lexicon (``lexicon.tsv``, word and valence from -3 to +3) ships inside the action archive and
is read once per process; nothing is downloaded. Rules: a negation ("not", "never", "no", "n't"
...) within the three words before a sentiment word flips and damps it; an intensifier ("very",
"extremely" ...) scales it up, a diminisher ("slightly" ...) down; after "but" a clause counts
more than before it. A sentence's sum s is mapped to (-1, 1) by s / sqrt(s*s + 15).

Input: ``analyse`` (FaaSProfiler's parameter name) or ``text``. Output: overall polarity (the
mean of the sentence scores), a label, the sentence count and the per-sentence scores.
"""

import math
import os
import re

NEGATIONS = {"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot"}
BOOSTERS = {
    "very": 1.5,
    "extremely": 1.8,
    "really": 1.4,
    "so": 1.3,
    "incredibly": 1.8,
    "highly": 1.5,
    "slightly": 0.5,
    "somewhat": 0.6,
    "barely": 0.4,
    "fairly": 0.8,
}
NEUTRAL_BAND = 0.05
NORMALISER = 15.0

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n{2,}")
TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")

_LEXICON = None


def lexicon():
    global _LEXICON
    if _LEXICON is None:
        table = {}
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lexicon.tsv")
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("#") or not line.strip():
                    continue
                word, valence = line.rstrip("\n").split("\t")
                table[word] = float(valence)
        _LEXICON = table
    return _LEXICON


def valence_of(word, table):
    if word in table:
        return table[word]
    # A crude stemmer: "loves" -> "love", "delays" -> "delay", "crashed" -> "crash".
    for suffix in ("s", "es", "ed", "d", "ing", "ly"):
        if word.endswith(suffix) and word[: -len(suffix)] in table:
            return table[word[: -len(suffix)]]
    return None


def score_sentence(sentence, table):
    tokens = TOKEN.findall(sentence.lower())
    total = 0.0
    positive = negative = 0
    but_at = tokens.index("but") if "but" in tokens else None
    for position, token in enumerate(tokens):
        value = valence_of(token, table)
        if value is None:
            continue
        window = tokens[max(0, position - 3) : position]
        for word in window:
            if word in BOOSTERS:
                value *= BOOSTERS[word]
        if any(word in NEGATIONS or word.endswith("n't") for word in window):
            value *= -0.75
        if but_at is not None:
            value *= 1.5 if position > but_at else 0.5
        if value > 0:
            positive += 1
        elif value < 0:
            negative += 1
        total += value
    return total / math.sqrt(total * total + NORMALISER), positive, negative


def main(args):
    text = args.get("analyse", args.get("text"))
    if not isinstance(text, str) or not text.strip():
        return {"error": "no text: pass the text to analyse in 'analyse' (or 'text')"}
    table = lexicon()
    sentences = [s.strip() for s in SENTENCE_END.split(text) if s.strip()]
    scores = []
    positive = negative = 0
    for sentence in sentences:
        score, pos, neg = score_sentence(sentence, table)
        scores.append(round(score, 4))
        positive += pos
        negative += neg
    polarity = sum(scores) / len(scores)
    label = "positive" if polarity > NEUTRAL_BAND else "negative" if polarity < -NEUTRAL_BAND else "neutral"
    return {
        "polarity": round(polarity, 4),
        "label": label,
        "sentences": len(sentences),
        "sentence_scores": scores,
        "positive_words": positive,
        "negative_words": negative,
        "lexicon_size": len(table),
    }
