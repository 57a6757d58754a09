#!/usr/bin/env python3
"""Counts, over dry-run prompts, the causes that make a prompt weak or broken.

Reads only the prompts (`prompts.jsonl` of `rocqa extract --dry-run`) and the pinned
source trees, never rocqa's own slice data, so it measures what a reader sees:

  python3 scripts/prompt_causes.py rocm_sources/rocblas-6.4.4 out/rocblas/6.4.4/dry-run/prompts.jsonl
  python3 scripts/prompt_causes.py --json TREE PROMPTS [TREE PROMPTS ...]

Causes (a prompt is counted once per cause):
  work-left-out      a function the target kernel (or a device function shown with it)
                     calls is listed as left out
  functor-missing    the target calls a functor `X{}(...)` and no `operator()` is shown
  constant-missing   a constant `#define`d in the tree is used by the target or its
                     launcher and no `#define` of it is shown
  doc-missing        an api-contract question promises a documentation comment that the
                     declaration block does not have
  other-library      a rocSOLVER prompt about its own code shows 40+ lines of rocBLAS
                     code (files of the newest rocblas-* tree beside it) whose functions
                     the question does not name
  base-unasked       base-form code in a prompt whose question compares no variants
  other-kernels      a kernel other than the one asked about is shown whole, unnamed
  dispatch-premise   "reaches the launch ... only when" while the launcher launches
                     the kernel at two or more sites (not "any of its N launches")
  generic            a question whose ideal answer is the same for every family
"""
import json
import os
import re
import sys
from collections import Counter

BLOCK = re.compile(r"^=== (\S+):(\d+)-(\d+) \((.*), ([a-z ,-]+)\) ===$", re.M)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*(?:<[^;{}()]*>)?\s*\(")
DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)(\(?)\s*(.*)$")
TEMPLATE = re.compile(r"template\s*<([^>]*)>")
GENERIC = {
    "a2k.variant-path",
    "mem.variant-layout",
    "mem.batched-pointers",
    "semantics.precision-variants",
    "edge.grid-limits",
    "a2k.entry-macro",
}
CHECK_TEMPLATES = {"edge.quick-return", "edge.zero-sizes"}
VARIANT_TEMPLATES = {"a2k.variant-path", "mem.variant-layout", "perf.variant-threshold"}
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "static_cast", "decltype"}


def constants_of(tree):
    """Object-like macros with a numeric value, by name, over the tree's sources."""
    out = set()
    for root, _, files in os.walk(os.path.join(tree, "library")):
        for f in files:
            if not f.endswith((".h", ".hpp", ".cpp", ".cuh")):
                continue
            try:
                text = open(os.path.join(root, f), errors="replace").read()
            except OSError:
                continue
            for line in text.splitlines():
                m = DEFINE.match(line)
                if m and not m.group(2) and re.search(r"\d", m.group(3)) and '"' not in m.group(3):
                    out.add(m.group(1))
    return out


def files_of(tree):
    """Paths of a tree's files, relative to its root."""
    out = set()
    for root, _, files in os.walk(tree):
        for f in files:
            out.add(os.path.relpath(os.path.join(root, f), tree))
    return out


def blocks(user):
    """(file, start, end, name, role, text) of each block of a prompt."""
    ms = list(BLOCK.finditer(user))
    out = []
    for k, m in enumerate(ms):
        end = ms[k + 1].start() if k + 1 < len(ms) else user.find("\n===", m.end())
        end = len(user) if end < 0 else end
        out.append((m.group(1), int(m.group(2)), int(m.group(3)), m.group(4), m.group(5), user[m.end():end]))
    return out


def left_out(user):
    i = user.find("=== left out of this slice for length ===")
    if i < 0:
        return []
    tail = user[i:].split("\nQuestion:")[0]
    return re.findall(r"\(([^()]+)\)\s*$", tail, re.M)


def params(text):
    out = set()
    for m in TEMPLATE.finditer(text):
        for part in m.group(1).split(","):
            ids = IDENT.findall(part.split("=")[0])
            if ids:
                out.add(ids[-1])
    return out




def causes(r, constants, lib, own=frozenset(), paired=frozenset()):
    user = r["messages"][-1][1]
    q = r["text"]
    bs = blocks(user)
    found = set()
    kernels = [b for b in bs if b[4].startswith("kernel")]
    target = next((b for b in kernels if re.search(r"\b%s\b" % re.escape(b[3]), q)), None)
    launcher = next((b for b in bs if b[4].startswith("host launcher") and re.search(r"\b%s\b" % re.escape(b[3]), q)), None)
    if target:
        shown = {b[3] for b in bs}
        device = [target] + [b for b in bs if b[4].startswith("device helper")]
        called = {c for b in device for c in CALL.findall(b[5])} - KEYWORDS
        if called & (set(left_out(user)) - shown):
            found.add("work-left-out")
        if re.search(r"\b[A-Z][A-Za-z0-9_]*\s*\{\s*\}\s*\(", target[5]) and "operator()" not in user:
            found.add("functor-missing")
        texts = [target[5]] + ([launcher[5]] if launcher else [])
        ps = set().union(*(params(t) for t in texts))
        used = {w for t in texts for w in IDENT.findall(re.sub(r"//.*", "", t)) if w in constants and w not in ps}
        shown_defs = set(re.findall(r"#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)", user))
        # Questions about the checks before a launch ask nothing of the kernel's values.
        if used - shown_defs and r["template_id"] not in CHECK_TEMPLATES:
            found.add("constant-missing")
        for b in kernels:
            if b is not target and not re.search(r"\b%s\b" % re.escape(b[3]), q):
                found.add("other-kernels")
                break
    if r["template_id"] == "semantics.api-contract":
        decl = next((b for b in bs if b[4] == "public declaration"), None)
        if decl is None or not re.search(r"/\*|//", decl[5]):
            found.add("doc-missing")
    aimed_there = target is not None and target[0] in paired and target[0] not in own
    if lib == "rocsolver" and paired and not aimed_there:
        # rocBLAS code: a file of the rocBLAS tree that the rocSOLVER tree does not have.
        other = [b for b in bs if b[0] in paired and b[0] not in own]
        lines = sum(b[2] - b[1] + 1 for b in other if not re.search(r"\b%s\b" % re.escape(b[3]), q))
        if lines >= 40:
            found.add("other-library")
    if "base form" in user and r["template_id"] not in VARIANT_TEMPLATES:
        # Base-form code the question names (a `_64` question comparing its function
        # with "the 64-bit counterpart of" the base one) is asked about.
        if any("base form" in b[4] and not re.search(r"\b%s\b" % re.escape(b[3].split(",")[0]), q) for b in bs):
            found.add("base-unasked")
    if r["template_id"] == "a2k.dispatch" and launcher and target:
        sites = [l for l in launcher[5].splitlines() if re.search(r"\b%s\b" % re.escape(target[3]), re.sub(r"//.*", "", l))]
        # A premise about one launch where there are several; naming all of them ("any
        # of its 4 launches") makes the condition one they all share.
        if len(sites) >= 2 and "any of its %d launches" % len(sites) not in q:
            found.add("dispatch-premise")
    if r["template_id"] in GENERIC:
        found.add("generic")
    return found


def main(argv):
    as_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    if len(args) < 2 or len(args) % 2:
        sys.exit(__doc__)
    report = {}
    for tree, path in zip(args[::2], args[1::2]):
        lib = "rocsolver" if "rocsolver" in os.path.basename(tree.rstrip("/")) else "rocblas"
        constants = constants_of(tree)
        own, paired = files_of(tree), set()
        if lib == "rocsolver":
            parent = os.path.dirname(os.path.abspath(tree.rstrip("/")))
            pairs = sorted(d for d in os.listdir(parent) if d.startswith("rocblas-"))
            if pairs:
                paired = files_of(os.path.join(parent, pairs[-1]))
        rows = [json.loads(l) for l in open(path)]
        c = Counter()
        for r in rows:
            c.update(causes(r, constants, lib, own, paired))
        tokens = sum(r.get("prompt_tokens", 0) for r in rows)
        report[path] = {"prompts": len(rows), "prompt_tokens": tokens, "causes": dict(sorted(c.items()))}
    if as_json:
        print(json.dumps(report, indent=1))
        return
    for path, r in report.items():
        n = r["prompts"]
        print(f"{path}: {n} prompts, {r['prompt_tokens']} prompt tokens")
        for k, v in r["causes"].items():
            print(f"  {k:18} {v:5}  ({100.0 * v / max(n, 1):.1f}%)")


if __name__ == "__main__":
    main(sys.argv[1:])
