#!/usr/bin/env python3
"""Independence check for a held-out corpus file.

Usage: independence.py CANDIDATE.jsonl [EXTRA.jsonl ...]

Compares every entry of CANDIDATE against every entry of the earlier corpora
(testdata/corpus/*.jsonl other than CANDIDATE, plus any EXTRA files given) and
against the other entries of CANDIDATE. An entry is flagged when
  * its letters-only word runs (runs of Unicode letters, so CJK text counts;
    digits and punctuation dropped) are 85 % or more contained in an earlier text,
    or an earlier text's are 85 % or more contained in it (longest common run
    of words over the shorter side's word count), or
  * its url plus text nearly equals an earlier entry's: the same normalised
    url and a difflib ratio >= 0.9 between the normalised texts, or
  * the same holds against an earlier entry of CANDIDATE itself (duplicate).
Prints counts only, never texts. With --ids it also prints the flagged ids
(ids, not texts), so the collector can drop them.
"""
import difflib
import glob
import json
import os
import re
import sys

THRESH = 0.85
NEAR = 0.90
MIN_WORDS = 3


def words(text):
    return re.findall(r"[^\W\d_]+", text.lower())


def norm(entry):
    """(url, text) lower-cased; url without scheme, www and trailing slash;
    text with hex runs of 8+ and digit runs folded, whitespace collapsed."""
    url = entry.get("url", "").lower()
    url = re.sub(r"^https?://(www\.)?", "", url).rstrip("/")
    text = re.sub(r"[0-9a-f]{8,}", "#", entry.get("text", "").lower())
    text = re.sub(r"\d+", "0", text)
    text = re.sub(r"\s+", " ", text).strip()
    return url, text


def near(n, m):
    """Same page and nearly the same text (difflib ratio >= NEAR)."""
    if n[0] != m[0]:
        return False
    a, b = n[1], m[1]
    if abs(len(a) - len(b)) > (1 - NEAR) * max(len(a), len(b)):
        return False
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= NEAR


def longest_run(a, b):
    """Length of the longest common contiguous run of words of a and b."""
    if not a or not b:
        return 0
    best = 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            if x == y:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best:
                    best = cur[j]
        prev = cur
    return best


def contained(a, b):
    """True when the shorter word list is THRESH-contained in the longer."""
    short = min(len(a), len(b))
    if short < MIN_WORDS:
        return a == b and short > 0
    # cheap pre-check: shared vocabulary must allow the threshold
    sa, sb = set(a), set(b)
    small = sa if len(a) <= len(b) else sb
    if len(small & (sa if small is sb else sb)) < THRESH * len(small):
        return False
    return longest_run(a, b) >= THRESH * short


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv):
    show_ids = "--ids" in argv
    argv = [a for a in argv if a != "--ids"]
    if not argv:
        print(__doc__)
        return 2
    cand_path = argv[0]
    here = os.path.dirname(os.path.abspath(cand_path))
    others = [p for p in sorted(glob.glob(os.path.join(here, "*.jsonl")))
              if os.path.abspath(p) != os.path.abspath(cand_path)]
    others += argv[1:]
    earlier = []
    for p in others:
        earlier += load(p)
    cand = load(cand_path)
    ew = [(words(e["text"]), norm(e)) for e in earlier]
    flagged = {"text_contained": [], "url_text_near": [], "duplicate_within": []}
    kept = []
    for e in cand:
        w, n = words(e["text"]), norm(e)
        why = None
        for ow, on in ew:
            if contained(w, ow):
                why = "text_contained"
                break
            if near(n, on):
                why = "url_text_near"
                break
        if why is None:
            for kw, kn in kept:
                if contained(w, kw) or near(n, kn):
                    why = "duplicate_within"
                    break
        if why:
            flagged[why].append(e["id"])
        else:
            kept.append((w, n))
    print("earlier files: %d, earlier entries: %d" % (len(others), len(earlier)))
    print("candidate entries: %d" % len(cand))
    for k, v in flagged.items():
        print("%s: %d" % (k, len(v)))
    print("independent: %d" % len(kept))
    if show_ids:
        for k, v in flagged.items():
            for i in v:
                print("flagged %s %s" % (k, i))
    return 1 if any(flagged.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
