# SPDX-License-Identifier: Apache-2.0
"""The boundary.layers test: the runtime's layers call only downward.

runtime/src/ holds one folder per layer, bottom up (runtime/src/README.md).
Given each layer's object files, in that order, this reads every object's
defined and undefined symbols with nm and fails when an object calls (or
reads) a symbol that only a higher layer defines, or when files call each
other in a loop (a file that calls another must not be called back by it,
directly or through others: one of them belongs below the other).

    python3 layers.py NM base=a.o|b.o backend=c.o ... api=z.o
"""
import subprocess
import sys


def symbols(nm, obj):
    """(defined, undefined) global symbol sets of one object file."""
    out = subprocess.run([nm, "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, undefined


def file_name(obj):
    """runtime/src/<layer>/<file>.c for an object CMake made from it."""
    marker = "/runtime/src/"
    at = obj.rfind(marker)
    name = obj[at + len(marker):] if at >= 0 else obj
    return name[:-2] if name.endswith(".o") else name


def loops(calls):
    """The groups of two or more files that reach each other by calls
    (strongly connected components, Tarjan's algorithm), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(calls.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(1000, 4 * len(calls) + 100))
    for node in sorted(calls):
        if node not in index:
            visit(node)
    return sorted(found)


def main(argv):
    nm, specs = argv[1], argv[2:]
    if not specs:
        print("layers.py: no layers given", file=sys.stderr)
        return 2
    rank, objects = {}, []
    for position, spec in enumerate(specs):
        layer, _, listed = spec.partition("=")
        files = [f for f in listed.split("|") if f]
        if not files:
            print(f"layers.py: layer {layer} has no object files", file=sys.stderr)
            return 2
        rank[layer] = position
        objects += [(layer, f) for f in files]
    definer = {}
    needs = {}
    for layer, obj in objects:
        defined, undefined = symbols(nm, obj)
        for name in defined:
            definer[name] = (layer, file_name(obj))
        needs[(layer, file_name(obj))] = undefined
    problems = []
    calls = {}
    for (layer, name), undefined in needs.items():
        for symbol in sorted(undefined):
            if symbol not in definer:
                continue
            other_layer, other = definer[symbol]
            if other != name:
                calls.setdefault(name, set()).add(other)
            if rank[other_layer] > rank[layer]:
                problems.append(f"{name} ({layer}) calls {symbol} of {other} ({other_layer}), a layer above it")
    for group in loops(calls):
        problems.append("these files call each other in a loop: " + " -> ".join(group))
    if problems:
        print("\n".join(problems))
        return 1
    print(f"boundary.layers: {len(needs)} objects in {len(rank)} layers ({', '.join(rank)}), every call downward, no loop")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
