"""Long manuscripts for the benchmarks, made from the corpus novel (Love Among the Chickens,
public domain): its chapters repeated to a length, each copy's chapter titles told apart, as a
real long book's would be. Cached under target/bench/."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, "target", "bench")


def words(path):
    with open(path, encoding="utf-8") as f:
        return len(f.read().split())


def big_markdown(novel_md, target_words, name):
    """The novel repeated to about target_words words, as target/bench/NAME."""
    os.makedirs(CACHE, exist_ok=True)
    out = os.path.join(CACHE, name)
    if os.path.exists(out):
        return out
    text = open(novel_md, encoding="utf-8").read()
    m = re.match(r"(---\n.*?\n---\n)(.*)", text, re.S)
    front, body = (m.group(1), m.group(2)) if m else ("", text)
    # The body's chapters (each from its `## ` heading), repeated until the book has the words.
    cut = [h.start() for h in re.finditer(r"^## ", body, flags=re.M)] or [0]
    chapters = [body[a:b] for a, b in zip(cut, cut[1:] + [len(body)])]
    total = 0
    with open(out, "w", encoding="utf-8") as f:
        f.write(front)
        f.write(body[: cut[0]])
        copy = 0
        while total < target_words:
            copy += 1
            for chapter in chapters:
                if total >= target_words:
                    break
                f.write(re.sub(r"^## (.+)$", lambda h: f"## {h.group(1)} ({copy})", chapter,
                               count=1, flags=re.M))
                f.write("\n")
                total += len(chapter.split())
    return out
