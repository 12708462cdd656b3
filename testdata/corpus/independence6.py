#!/usr/bin/env python3
"""Independence check for holdout6.jsonl against the earlier corpora.

An entry of holdout6 is flagged when
  * its url (normalised) is the url of an earlier entry and the two texts are
    near-identical (difflib ratio >= 0.90 on normalised text), or
  * reduced to letters-only words, its longest run of words that also stands,
    in order, in an earlier text covers >= 85 % of its words, or the longest
    such run covers >= 85 % of the earlier text's words (the reverse; only
    for earlier texts of 4 or more such words), or
  * the same holds against an earlier entry of holdout6 itself (duplicates
    within the set; the later one is flagged).

Prints counts only, never a text or an id. Usage (from the repository root):
  python3 testdata/corpus/independence6.py
"""
import difflib
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "holdout6.jsonl")
THRESHOLD = 0.85
NEAR = 0.90
# The reverse direction (an earlier text standing inside a holdout6 text) only
# counts when the earlier text has at least MIN_REVERSE letters-only words:
# a one- to three-word text ("Overloaded", a Chinese message whose only
# Latin letters are a code) is a token, not a template, and would otherwise
# knock out every longer text that happens to contain it.
MIN_REVERSE = 4


def norm_url(u):
    u = u.strip().lower()
    u = re.sub(r"^https?://(www\.)?", "", u)
    u = u.split("#", 1)[0]
    return u.rstrip("/")


def norm_text(t):
    t = t.lower()
    t = re.sub(r"[0-9a-f]{8,}", "h", t)
    t = re.sub(r"[0-9]+", "0", t)
    return re.sub(r"\s+", " ", t).strip()


def words(t):
    return re.findall(r"[a-z]+", t.lower())


def longest_run(a, b):
    if not a or not b:
        return 0
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sm.find_longest_match(0, len(a), 0, len(b)).size


def contained(a, sa, b, sb):
    """True when a run of words that stands in order in both texts covers
    >= THRESHOLD of a's words (a is contained in b), or of b's words when b
    has at least MIN_REVERSE words (b is contained in a)."""
    if not a or not b:
        return False
    common = len(sa & sb)
    # a run can cover no more distinct words than the sets share
    fwd_possible = common >= THRESHOLD * len(sa)
    rev_possible = len(b) >= MIN_REVERSE and common >= THRESHOLD * len(sb)
    if not fwd_possible and not rev_possible:
        return False
    run = longest_run(a, b)
    return run >= THRESHOLD * len(a) or (len(b) >= MIN_REVERSE and run >= THRESHOLD * len(b))


def load(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def prep(e):
    w = words(e["text"])
    return {"id": e["id"], "url": norm_url(e.get("url", "")),
            "nt": norm_text(e["text"]), "w": w, "s": set(w)}


def main():
    mine = [prep(e) for e in load(TARGET)]
    earlier = []
    files = 0
    for p in sorted(glob.glob(os.path.join(HERE, "*.jsonl"))):
        if os.path.abspath(p) == TARGET or os.path.basename(p).startswith("holdout7"):
            continue
        files += 1
        earlier.extend(prep(e) for e in load(p))
    urls = {}
    for e in earlier:
        urls.setdefault(e["url"], []).append(e)

    flag_url, flag_words, flag_self = set(), set(), set()
    for e in mine:
        for o in urls.get(e["url"], []):
            if difflib.SequenceMatcher(None, e["nt"], o["nt"]).ratio() >= NEAR:
                flag_url.add(e["id"])
                break
        for o in earlier:
            if contained(e["w"], e["s"], o["w"], o["s"]):
                flag_words.add(e["id"])
                break
    for i, e in enumerate(mine):
        for o in mine[:i]:
            same_url = e["url"] == o["url"] and \
                difflib.SequenceMatcher(None, e["nt"], o["nt"]).ratio() >= NEAR
            if same_url or contained(e["w"], e["s"], o["w"], o["s"]):
                flag_self.add(e["id"])
                break
    flagged = flag_url | flag_words | flag_self
    shared_urls = len({e["url"] for e in mine} & set(urls))
    print(f"earlier files: {files}, earlier entries: {len(earlier)}")
    print(f"holdout6 entries: {len(mine)}")
    print(f"holdout6 urls also in earlier files: {shared_urls}")
    print(f"flagged, same url and near-identical text: {len(flag_url)}")
    print(f"flagged, letters-only word run >= 85% (either direction): {len(flag_words)}")
    print(f"flagged, duplicate within holdout6: {len(flag_self)}")
    print(f"flagged, total: {len(flagged)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
