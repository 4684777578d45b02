#!/usr/bin/env python3
"""Finds import cycles between the modules of each crate of the workspace.

`cargo tree` shows that the crates depend one way (edges -> node core -> actors ->
storage -> protocol); this shows the same inside each crate. A module's edges are the
`crate::a::...`, `super::...` and `self::...` paths its files name (in `use` lines or in
code); each path is resolved to the modules it passes through. Two modules are compared at
the level where they are siblings (brace groups `crate::{a::X, B}` are expanded, and a
name a module re-exports, such as the `crate::Type` that `lib.rs` re-exports, resolves
to the module that defines it): `crate::config::agents` naming `crate::core::x` is an
edge config -> core; `context::actor` naming `context::stream` is an edge actor -> stream
inside `context`. A child naming its own ancestors is not an edge (that is how a module
uses what its parent declares). Test modules (`tests.rs`, `tests_*.rs`, `*_tests.rs`, `#[cfg(test)]`
files) are left out: tests may look anywhere.

Usage: scripts/module-cycles.py [CRATE_SRC_DIR ...]   (default: every crate of the workspace)
Prints each cycle found; exits 1 if there is any.
"""

import os
import re
import sys

CRATES = ["src", "node/src", "actors/src", "storage/src", "protocol/src"]
PATH = re.compile(r"\b(crate|super|self)((?:::[a-z_][a-z0-9_]*)+)")


def module_files(root):
    """(module path as a tuple, file) for every .rs file below `root`."""
    for dirpath, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), root)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            yield tuple(rel), os.path.join(dirpath, name)


def is_test(module, path):
    last = module[-1] if module else ""
    return last == "tests" or last.startswith("tests_") or last.endswith("_tests") or "/tests/" in path


def strip_test_blocks(text):
    """Drops `#[cfg(test)] mod x { ... }` blocks (brace-matched)."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def expand_tree(text, i):
    """The paths of the use tree that starts at text[i] (after a `::`): `a::b`, or a
    brace group `{a::B, c::{D, E}, F}`, nested; returns (paths as part lists, end)."""
    if i < len(text) and text[i] == "{":
        paths, j, item = [], i + 1, ""
        while j < len(text):
            c = text[j]
            if c == "{":
                sub, j = expand_tree(text, j)
                prefix = [p for p in item.strip().strip(":").split("::") if p]
                paths += [prefix + s for s in sub]
                item = None
                continue
            if c in ",}":
                if item and item.strip():
                    paths.append([p for p in item.strip().split(" as ")[0].strip().split("::") if p])
                item = ""
                if c == "}":
                    return paths, j + 1
            elif item is not None:
                item += c
            j += 1
        return paths, j
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*(::\{)?", text[i:])
    if not m:
        return [], i
    head = [p for p in m.group(0).rstrip("{").split("::") if p]
    if m.group(1):
        sub, j = expand_tree(text, i + m.end() - 1)
        return [head + s for s in sub], j
    return [head], i + m.end()


def named_paths(text):
    """(kind, parts) for every `crate::`, `super::` and `self::` path in `text`, brace
    groups expanded; `super::super::x` keeps its `super`s in `parts`."""
    for m in re.finditer(r"\b(crate|super|self)::", text):
        if m.start() >= 2 and text[m.start() - 2 : m.start()] == "::":
            continue  # the middle of a longer path, e.g. `super::super::`
        for parts in expand_tree(text, m.end())[0]:
            yield m.group(1), parts


def reexports(files, modules):
    """{(module, Name): (source module, parts)} for every `pub use` (any visibility) of a
    module's file: what `crate::Name` or `module::Name` stands for."""
    found = {}
    for module, path in files.items():
        text = re.sub(r"//[^\n]*", "", open(path, encoding="utf-8").read())
        for m in re.finditer(r"\bpub(?:\([a-z]+\))?\s+use\s+", text):
            for parts in expand_tree(text, m.end())[0]:
                if not parts:
                    continue
                name = parts[-1]
                found[(module, name)] = (module, parts)
    return found


def resolve(base, parts, modules, exports, depth=0):
    """The deepest module that `parts`, read from `base`, passes through, following
    re-exports (`crate::Type` is the module that defines what the root re-exports)."""
    target = base
    for k, part in enumerate(parts):
        if part in ("crate", "self"):
            target = () if part == "crate" else target
        elif part == "super":
            target = target[:-1]
        elif target + (part,) in modules:
            target = target + (part,)
        elif (target, part) in exports and depth < 8:
            source, path = exports[(target, part)]
            return resolve(source, path, modules, exports, depth + 1)
        else:
            break
    return target


def edges(root):
    files = dict(module_files(root))
    modules = set(files)
    exports = reexports(files, modules)
    graph = {}
    for module, path in files.items():
        if is_test(module, path):
            continue
        text = strip_test_blocks(open(path, encoding="utf-8").read())
        text = re.sub(r"//[^\n]*", "", text)
        here = module
        for kind, parts in named_paths(text):
            if kind == "crate":
                base = ()
            elif kind == "self":
                base = here
            else:
                base = here[:-1]
                while parts and parts[0] == "super":
                    base, parts = base[:-1], parts[1:]
            add_edge(graph, module, resolve(base, parts, modules, exports))
    return graph


def add_edge(graph, source, target):
    """The edge between the two modules' children of their deepest common ancestor."""
    common = 0
    while common < min(len(source), len(target)) and source[common] == target[common]:
        common += 1
    if common == len(source) or common == len(target):
        return  # one contains the other: a parent and its child
    a, b = source[: common + 1], target[: common + 1]
    graph.setdefault(a, set()).add(b)


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main(roots):
    bad = 0
    for root in roots:
        for component in cycles(edges(root)):
            bad += 1
            names = ", ".join("::".join(m) for m in component)
            print(f"{root}: import cycle between {names}")
    if not bad:
        print(f"no import cycle between modules in {', '.join(roots)}")
    return 1 if bad else 0


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main(sys.argv[1:] or CRATES))
