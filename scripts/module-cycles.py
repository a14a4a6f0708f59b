#!/usr/bin/env python3
"""Import cycles between the modules of one Rust crate.

Usage: scripts/module-cycles.py CRATE_SRC_DIR [--edges] [--follow-reexports]

Builds the crate's module tree from `lib.rs` (or `main.rs`) by following `mod x;`
declarations (`x.rs` or `x/mod.rs`) and inline `mod x { ... }` blocks, then collects
the edges "module A refers to module B":

- `use` declarations, with nested trees (`use crate::a::{b, c::{d, e as f}, self, *};`),
  `crate::`, `self::`, `super::` (repeated), and paths that start at a child module or
  at a name an earlier `use` brought in;
- path-qualified references in code (`crate::x::f()`, `super::y::Z`, `child::g()`,
  `alias::h()` where `alias` was imported from this crate).

A path points at the longest prefix of it that is a module: importing
`crate::html::Warning` depends on `html` even when `html` only re-exports it (`pub use
model::Warning`), since the path goes through `html`. With `--follow-reexports` such a
name is followed to the module that defines it instead. Comments, doc comments and
string literals are ignored (intra-doc links are not imports). `mod x;` itself is not an
edge. An edge from a module to one of its ancestors counts (a child that imports from
its parent while the parent imports the child is a cycle).

Prints every strongly connected component of more than one module as a cycle, with one
concrete loop and where each of its edges comes from (file:line); exits 1 if there is
any, 0 otherwise. `--edges` also prints every edge.
"""

import os
import re
import sys
from collections import defaultdict

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """Blanks comments, string and char literals, keeping every newline and offset."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not re.match(r"\w", text[i - 1])):
            m = re.match(r'r(#*)"', text[i:])
            close = '"' + m.group(1)
            j = text.find(close, i + len(m.group(0)))
            j = n if j < 0 else j + len(close)
            blank(i, j)
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not re.match(r"\w", text[i - 1]))):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, min(j + 1, n))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'\n])'", text[i:])
            if m:
                blank(i, i + len(m.group(0)))
                i += len(m.group(0))
            else:
                i += 1  # a lifetime
        else:
            i += 1
    return "".join(out)


def matching_brace(text, open_at):
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


class Crate:
    def __init__(self, src):
        self.src = src
        self.modules = {}  # path tuple -> list of (file, text, spans) where spans are owned ranges
        self.children = defaultdict(set)
        self.regions = []  # (module path, file, stripped text, start, end, excluded ranges)
        root = None
        for name in ("lib.rs", "main.rs"):
            if os.path.exists(os.path.join(src, name)):
                root = os.path.join(src, name)
                break
        if root is None:
            sys.exit(f"{src}: no lib.rs or main.rs")
        self.load_file(("crate",), root, src)

    def load_file(self, path, file, child_dir):
        with open(file, encoding="utf-8") as f:
            text = strip(f.read())
        self.scan(path, file, text, 0, len(text), child_dir)

    def scan(self, path, file, text, start, end, child_dir):
        """Registers module `path` owning text[start:end] minus its inline child modules."""
        self.modules.setdefault(path, [])
        excluded = []
        pat = re.compile(r"\bmod\s+(" + IDENT + r")\s*([;{])")
        k = start
        while True:
            m = pat.search(text, k, end)
            if not m:
                break
            name = m.group(1)
            child = path + (name,)
            self.children[path].add(name)
            if m.group(2) == "{":
                open_at = m.end() - 1
                close = matching_brace(text, open_at)
                self.scan(child, file, text, open_at + 1, close, os.path.join(child_dir, name))
                excluded.append((open_at + 1, close))
                k = close + 1
            else:
                k = m.end()
                for cand, sub in (
                    (os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name)),
                    (os.path.join(child_dir, name, "mod.rs"), os.path.join(child_dir, name)),
                ):
                    if os.path.exists(cand):
                        self.load_file(child, cand, sub)
                        break
                else:
                    print(f"warning: {file}: no file for mod {name}", file=sys.stderr)
        self.regions.append((path, file, text, start, end, excluded))


def use_tree(tree):
    """Expands a use tree into (path segments, bound name); the name is None for a glob."""
    tree = re.sub(r"\s+", " ", tree).strip()
    tree = re.sub(r"\s*(::|,|\{|\})\s*", r"\1", tree)
    out = []

    def expand(prefix, t):
        t = t.strip()
        if not t:
            return
        b = t.find("{")
        if b >= 0:
            head = [s for s in t[:b].split("::") if s]
            for part in split_top(t[b + 1:t.rfind("}")]):
                expand(prefix + head, part)
            return
        alias = None
        m = re.match(r"^(.*?) as (" + IDENT + r")$", t)
        if m:
            t, alias = m.group(1), m.group(2)
        segs = prefix + [s for s in t.split("::") if s]
        if not segs:
            return
        if segs[-1] == "*":
            out.append((segs[:-1], None))
            return
        if segs[-1] == "self":
            segs = segs[:-1]
        if segs:
            out.append((segs, alias or segs[-1]))

    expand([], tree)
    return out


def split_top(s):
    parts, depth, cur = [], 0, ""
    for c in s:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    if cur:
        parts.append(cur)
    return parts


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show_edges = "--edges" in sys.argv
    follow = "--follow-reexports" in sys.argv
    if len(args) != 1:
        sys.exit(__doc__)
    crate = Crate(args[0])
    mods = set(crate.modules)

    use_re = re.compile(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
    path_re = re.compile(r"(?<![\w:])((?:" + IDENT + r"::)+" + IDENT + r")")

    # pass 1: per module, its use declarations (bindings, re-exports) and where they are
    uses = defaultdict(list)  # module -> [(segments, bound, public, file, line)]
    code = defaultdict(list)  # module -> [(segments, file, line)]
    for path, file, text, start, end, excluded in crate.regions:
        def owned(pos):
            return start <= pos < end and not any(a <= pos < b for a, b in excluded)

        def line_of(pos):
            return text.count("\n", 0, pos) + 1

        use_spans = []
        for m in use_re.finditer(text, start, end):
            if not owned(m.start()):
                continue
            use_spans.append((m.start(), m.end()))
            for segs, bound in use_tree(m.group(2)):
                uses[path].append((segs, bound, bool(m.group(1)), file, line_of(m.start())))
        for m in path_re.finditer(text, start, end):
            if not owned(m.start()) or any(a <= m.start() < b for a, b in use_spans):
                continue
            code[path].append((m.group(1).split("::"), file, line_of(m.start())))

    def absolute(module, segs, bindings):
        """The path from the crate root that `segs`, written in `module`, names; None when
        it leaves the crate."""
        if not segs:
            return None
        first = segs[0]
        if first == "crate":
            return ("crate",) + tuple(segs[1:])
        if first in ("self", "super"):
            cur, rest = module, list(segs)
            while rest and rest[0] in ("self", "super"):
                if rest.pop(0) == "super":
                    cur = cur[:-1]
                    if not cur:
                        return None
            return cur + tuple(rest)
        if first in crate.children.get(module, ()):
            return module + tuple(segs)
        if first in bindings:
            target = bindings[first]
            return None if target is None else target + tuple(segs[1:])
        return None

    # bindings of each module: name -> absolute path (or None when external)
    bindings = {}
    reexports = defaultdict(dict)  # module -> name -> absolute path
    for module in mods:
        b = {}
        for segs, bound, public, _, _ in uses[module]:
            if bound is None:
                continue
            b[bound] = absolute(module, segs, {})
        for segs, bound, public, _, _ in uses[module]:
            if bound is not None and b.get(bound) is None:
                b[bound] = absolute(module, segs, b)
        bindings[module] = b
        for segs, bound, public, _, _ in uses[module]:
            if public and bound is not None and b.get(bound) is not None:
                reexports[module][bound] = b[bound]

    def target_module(p):
        for _ in range(8):
            k = len(p)
            while k > 0 and p[:k] not in mods:
                k -= 1
            if k == 0:
                return None
            m = p[:k]
            if follow and k < len(p) and p[k] in reexports.get(m, {}):
                p = reexports[m][p[k]] + p[k + 1:]
                continue
            return m
        return m

    edges = defaultdict(dict)  # a -> b -> (file, line)

    def add(a, segs, file, line, b_map):
        p = absolute(a, segs, b_map)
        if p is None:
            return
        t = target_module(p)
        if t is None or t == a:
            return
        edges[a].setdefault(t, (file, line))

    for module in mods:
        for segs, bound, public, file, line in uses[module]:
            add(module, segs, file, line, bindings[module])
        for segs, file, line in code[module]:
            add(module, segs, file, line, bindings[module])

    name = lambda m: "::".join(m)
    if show_edges:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                f, l = edges[a][b]
                print(f"edge: {name(a)} -> {name(b)}  ({os.path.relpath(f)}:{l})")

    # Tarjan's strongly connected components
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(mods):
        if v not in index:
            visit(v)

    for comp in sorted(sccs):
        members = set(comp)
        # one concrete loop: BFS from the first member back to itself inside the component
        s = comp[0]
        prev, queue, loop = {s: None}, [s], None
        while queue and loop is None:
            v = queue.pop(0)
            for w in sorted(edges.get(v, {})):
                if w not in members:
                    continue
                if w == s:
                    loop = [v]
                    while prev[loop[-1]] is not None:
                        loop.append(prev[loop[-1]])
                    loop = list(reversed(loop)) + [s]
                    break
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        print(f"cycle among {len(comp)} modules: {', '.join(name(m) for m in comp)}")
        for a, b in zip(loop, loop[1:]):
            f, l = edges[a][b]
            print(f"  {name(a)} -> {name(b)}  ({os.path.relpath(f)}:{l})")
    print(f"{len(mods)} modules, {sum(len(v) for v in edges.values())} edges, {len(sccs)} cycles")
    sys.exit(1 if sccs else 0)


if __name__ == "__main__":
    main()
