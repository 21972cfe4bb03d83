#!/usr/bin/env python3
"""Import circles between the modules (files) of each crate: a module
that names another through `crate::` (or `super::`) depends on it. Prints
every circle found and exits 1 if there is one. A parent declaring its
child (`mod x;`) is not an import; a child's `use super::*` in a test
module is not counted (tests see their own file).
Usage: scripts/module-cycles.py [crate-src-dir ...] (default: every
crates/*/src and src)."""
import glob, os, re, sys

def modules(src):
    mods = {}
    for f in glob.glob(os.path.join(src, '**/*.rs'), recursive=True):
        rel = os.path.relpath(f, src)[:-3]
        parts = rel.split(os.sep)
        if parts[-1] in ('lib', 'main'):
            parts = parts[:-1]
        elif parts[-1] == 'mod':
            parts = parts[:-1]
        mods['::'.join(parts)] = f
    return mods

def strip_tests(text):
    i = text.find('#[cfg(test)]\nmod tests')
    return text if i < 0 else text[:i]

def resolve(path, mods):
    parts = path.split('::')
    for n in range(len(parts), 0, -1):
        cand = '::'.join(parts[:n])
        if cand in mods:
            return cand
    return None

def edges(src):
    mods = modules(src)
    g = {m: set() for m in mods}
    for m, f in mods.items():
        text = strip_tests(open(f).read())
        text = re.sub(r'//[^\n]*', '', text)
        found = set()
        for mm in re.finditer(r'\bcrate::([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)', text):
            found.add(mm.group(1))
        # use crate::{a, b::c}
        for mm in re.finditer(r'\bcrate::\{([^}]*)\}', text):
            for p in mm.group(1).split(','):
                found.add(p.strip().split('::{')[0])
        parent = m.rsplit('::', 1)[0] if '::' in m else ''
        for mm in re.finditer(r'\bsuper::([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)', text):
            found.add((parent + '::' if parent else '') + mm.group(1))
        for p in found:
            t = resolve(p, mods)
            # a module naming its own descendants or ancestors is structure
            if t is None or t == m or t == '' or m.startswith(t + '::') or t.startswith(m + '::'):
                continue
            g[m].add(t)
    return g

def cycles(g):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in g:
        if v not in index:
            visit(v)
    return out

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
srcs = sys.argv[1:] or sorted(glob.glob(os.path.join(root, 'crates/*/src'))) + [os.path.join(root, 'src')]
bad = 0
for src in srcs:
    g = edges(src)
    for c in cycles(g):
        bad = 1
        inner = {m: sorted(t for t in g[m] if t in c) for m in c}
        print(f"{os.path.relpath(src, root)}: import circle: " + '; '.join(f"{m} -> {', '.join(ts)}" for m, ts in inner.items()))
sys.exit(bad)
