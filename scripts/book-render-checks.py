#!/usr/bin/env python3
"""What scripts/check-book-render checks in a page as headless Chromium rendered it (its DOM after
the book's scripts ran), beside the committed data. Standard library only (Python 3.11+).

  book-render-checks.py listings <page> <dom.html>
      every CUDA and Rust listing of the page is highlighted: highlight.js wrapped its keywords in
      `hljs-keyword` spans, and in a CUDA listing CUDA's own words (`__global__`, `threadIdx`, ...)
      are marked too.
  book-render-checks.py front <dom.html> <book/src/data> <course.toml>
      the front page's headline table is the data: for every family and every GPU measured, the
      family's final step (the last step of its ladder that runs at its summary case) and each peer
      whose counterpart it is, with their GB/s and the peer's time over the step's; and for every
      multi-GPU session, the best all-reduce step (by size where measured, else the ring) beside
      NCCL's and PyTorch's.
  book-render-checks.py charts <result>
      reads what the chart probe page (check-book-render) wrote: a line per chart, `ok` or what is
      wrong.
Each prints `ok ...` lines, or `FAIL ...` lines and exits 1.
"""

import html
import json
import re
import sys
import tomllib
from html.parser import HTMLParser
from pathlib import Path

# Words of CUDA that a C++ highlighter alone leaves plain; a CUDA listing that uses one must show
# it highlighted.
CUDA_WORDS = {"__global__", "__device__", "__shared__", "__restrict__", "__forceinline__", "threadIdx",
              "blockIdx", "blockDim", "gridDim", "__syncthreads", "__syncwarp", "__shfl_down_sync",
              "__shfl_xor_sync", "__ballot_sync", "atomicAdd", "__ldcs", "__ldg", "float4"}


def code_blocks(dom, language):
    """The inner HTML of every `<code class="language-<language> ...">` block."""
    pattern = re.compile(r'<code class="language-' + language + r'\b[^"]*">(.*?)</code>', re.S)
    return pattern.findall(dom)


def spans(block, kind):
    return [html.unescape(w) for w in re.findall(r'<span class="hljs-' + kind + r'">([^<]*)</span>', block)]


def check_listings(page, dom_file):
    dom = Path(dom_file).read_text()
    failures, notes = [], []
    for language in ("cuda", "rust"):
        blocks = code_blocks(dom, language)
        for i, block in enumerate(blocks, 1):
            keywords = spans(block, "keyword")
            if not keywords:
                failures.append(f"{page}: {language} listing {i} has no highlighted keyword")
                continue
            if language == "cuda":
                text = html.unescape(re.sub(r"<[^>]+>", "", block))
                # The code, not its comments: a word named in a comment is not highlighted.
                text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
                used = {w for w in CUDA_WORDS if re.search(r"\b" + re.escape(w) + r"\b", text)}
                marked = set(keywords) | set(spans(block, "built_in"))
                missing = sorted(used - marked)
                if missing:
                    failures.append(f"{page}: cuda listing {i} leaves {', '.join(missing)} plain")
        if blocks:
            count = sum(len(spans(b, "keyword")) for b in blocks)
            notes.append(f"{len(blocks)} {language} listings, {count} keywords")
    return failures, [f"{page}: listings highlighted ({'; '.join(notes)})"] if notes and not failures else []


class TableParser(HTMLParser):
    """The rows of the first table inside `<div class="headline">`, as lists of cell texts."""

    def __init__(self):
        super().__init__()
        self.depth = 0  # >0 inside the headline div
        self.rows, self.row, self.cell, self.done = [], None, None, False

    def handle_starttag(self, tag, attrs):
        if self.done:
            return
        if tag == "div" and ("class", "headline") in attrs:
            self.depth = 1
        elif tag == "div" and self.depth:
            self.depth += 1
        elif self.depth and tag == "tr":
            self.row = []
        elif self.depth and tag in ("td", "th") and self.row is not None:
            self.cell = ""

    def handle_endtag(self, tag):
        if self.done:
            return
        if tag == "div" and self.depth:
            self.depth -= 1
            self.done = self.depth == 0
        elif self.depth and tag in ("td", "th") and self.cell is not None:
            self.row.append(" ".join(self.cell.split()))
            self.cell = None
        elif self.depth and tag == "tr" and self.row is not None:
            self.rows.append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def short_gpu(name):
    name = name.removeprefix("NVIDIA ")
    return name.split()[0] if name.split() else name


def torch_lines(path):
    """{("op dtype", case): {"gbs", "median_ms"}} from a torch_reductions.py output file."""
    lines = {}
    if path.exists():
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) == 6 and words[0] == "torch":
                _, op, dtype, case, size, ms = words
                ms = float(ms)
                lines[(f"{op} {dtype}", case)] = {"gbs": int(size) / ms / 1e6, "median_ms": ms}
    return lines


def expected_front_rows(data, registry):
    """(technique, gpu, step, GB/s, peer, peer GB/s, speed-up) per row, from the data alone."""
    results = {}  # gpu folder -> list of results files
    for path in sorted(Path(data).glob("*/*.json")):
        if path.parent.name in ("measured", "accuracy", "multi-gpu"):
            continue
        results.setdefault(path.parent.name, []).append(json.loads(path.read_text()))
    course = tomllib.loads(Path(registry).read_text())
    rows = []
    for family in course["family"]:
        summary = family["summary_case"]
        ladder = [(chapter["crate"], step) for chapter in family["chapter"] for step in chapter.get("step", [])
                  if not step.get("extra", False) and summary in step.get("cases", family["cases"])]
        if not ladder:
            continue
        crate, final = ladder[-1]
        peers = [p for p in family.get("peer", []) if p.get("counterpart") == final["name"]]
        for folder, files in sorted(results.items()):
            torch = torch_lines(Path(data) / folder / "torch-reductions.txt")

            def record(crate_name, step):
                for f in files:
                    if f["crate"] == crate_name:
                        for r in f["records"]:
                            if r["step"] == step and r["case"] == summary:
                                return r
                return None
            ours = record(crate, final["name"])
            if ours is None:
                continue
            gpu = short_gpu(files[0]["device"]["name"])
            for peer in peers:
                if "torch" in peer:  # timed by scripts/torch_reductions.py in the tour's session
                    theirs = torch.get((peer["torch"], summary))
                else:
                    theirs = record(peer["crate"], peer["name"])
                if theirs is not None:
                    rows.append((family["title"], gpu, final["name"], ours["gbs"], peer["source"], theirs["gbs"],
                                 theirs["median_ms"] / ours["median_ms"]))
    for session in sorted(Path(data).glob("multi-gpu/*.txt")):
        facts, lines = {}, []
        for line in session.read_text().splitlines():
            if line.startswith("# "):
                name, _, value = line[2:].partition(" ")
                facts.setdefault(name, value)
            elif line.strip():
                kind, method, gpus, size, ms = line.split()
                if kind == "allreduce":
                    lines.append((method, int(gpus), int(size), float(ms)))
        # The course's best step: the plan by size where the session measured it, else the ring.
        step = "by-size" if any(l[0] == "by-size" for l in lines) else "ring"
        ours = [l for l in lines if l[0] == step]
        if not ours:
            continue
        gpus = max(l[1] for l in ours)
        size = max(l[2] for l in ours if l[1] == gpus)
        busbw = lambda ms: size / (ms * 1e-3) / 1e9 * 2 * (gpus - 1) / gpus
        ours_ms = next(l[3] for l in ours if l[1] == gpus and l[2] == size)
        for method in ("nccl", "torch"):
            other = [l for l in lines if l[0] == method and l[1] == gpus and l[2] == size]
            if other:
                rows.append(("Across GPUs", f"{gpus} x {short_gpu(facts.get('device', '?'))}", step, busbw(ours_ms),
                             method, busbw(other[0][3]), other[0][3] / ours_ms))
    return rows


def check_front(dom_file, data, registry):
    parser = TableParser()
    parser.feed(Path(dom_file).read_text())
    if not parser.rows:
        return ["front page: no headline table (div.headline) in the rendered page"], []
    header, body = parser.rows[0], parser.rows[1:]
    want = ["technique", "GPU", "final step", "GB/s", "peer", "peer GB/s", "speed-up over the peer"]
    if header != want:
        return [f"front page: the headline table's columns are {header}, expected {want}"], []
    # Cells left empty repeat the row above (a family's name, a step beside its second peer).
    shown, previous = [], None
    for row in body:
        if previous is not None:
            row = [cell if cell else previous[i] for i, cell in enumerate(row)]
        shown.append(row)
        previous = row
    expected = expected_front_rows(data, registry)
    failures = []
    if len(shown) != len(expected):
        failures.append(f"front page: {len(shown)} rows in the headline table, the data has {len(expected)}")
    for row, (technique, gpu, step, gbs, peer, peer_gbs, speed_up) in zip(shown, expected):
        number = lambda text: float(text.rstrip("x"))
        problems = []
        if not row[0].startswith(technique):
            problems.append(f"technique {row[0]!r}, expected {technique!r}")
        if row[1] != gpu:
            problems.append(f"GPU {row[1]!r}, expected {gpu!r}")
        if row[2] != step:
            problems.append(f"step {row[2]!r}, expected {step!r}")
        if abs(number(row[3]) - gbs) > 0.51:
            problems.append(f"GB/s {row[3]}, the data says {gbs:.2f}")
        if peer.lower() not in row[4].lower():
            problems.append(f"peer {row[4]!r}, expected {peer!r}")
        if abs(number(row[5]) - peer_gbs) > 0.51:
            problems.append(f"peer GB/s {row[5]}, the data says {peer_gbs:.2f}")
        if abs(number(row[6]) - speed_up) > 0.0051:
            problems.append(f"speed-up {row[6]}, the data says {speed_up:.4f}")
        if problems:
            failures.append(f"front page, {technique} on {gpu}: " + "; ".join(problems))
    return failures, [] if failures else [f"front page: headline table matches the data ({len(shown)} rows)"]


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "listings":
        failures, oks = check_listings(*args)
    elif command == "front":
        failures, oks = check_front(*args)
    elif command == "charts":
        lines = [l for l in Path(args[0]).read_text().splitlines() if l.strip()]
        failures = [l for l in lines if not l.startswith("ok ")] or ([] if lines else ["charts: no result"])
        oks = lines if not failures else []
    else:
        sys.exit(f"unknown command {command}")
    for line in oks:
        print(f"ok   {line}")
    for line in failures:
        print(f"FAIL {line}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
