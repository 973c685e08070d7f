#!/usr/bin/env python3
"""check_layering.py: find call loops between source files from the symbols of their objects.

A file depends on another when its object file has an undefined symbol the other defines (a
direct call, or a direct reference to a global).  Calls through a function-pointer table (the
backends' ops tables) leave no such symbol, which is why they are the sanctioned way for a lower
layer to reach a higher one.  A loop is a set of files that reach each other (a strongly
connected component of more than one file); the check fails on any.

usage: check_layering.py [--report] GROUP=OBJECT_OR_ARCHIVE[,...] ...
  Each group is checked on its own (the daemon's objects, the client library's objects), so a
  symbol of one never links files of the other.  --report prints each group's files ordered by
  layer (a file only calls files listed before it) and the edge count.
"""
import os
import re
import subprocess
import sys


def object_name(member):
	"""The source file's stem from an object's name (automake prefixes it with the target)."""
	base = os.path.basename(member)
	base = re.sub(r'\.(o|lo)$', '', base)
	return re.sub(r'^.*?[-]', '', base) if '-' in base else base


def read_symbols(paths):
	"""{file: (defined set, undefined set)} from nm's POSIX output over objects and archives."""
	files = {}
	for kind, flags in ((0, ['-g', '--defined-only']), (1, ['-u'])):
		out = subprocess.run(['nm', '-A', '-P'] + flags + paths, capture_output=True,
		    text=True, check=True).stdout
		for line in out.splitlines():
			where, _, rest = line.partition(': ')
			if not rest:
				continue
			member = where[where.index('[') + 1:-1] if where.endswith(']') else where
			files.setdefault(object_name(member), (set(), set()))[kind].add(rest.split()[0])
	return files


def edges_of(files):
	"""{file: set of files it calls} (a symbol defined in several files links none of them)."""
	owner = {}
	for name, (defined, _) in files.items():
		for sym in defined:
			owner[sym] = None if sym in owner else name
	edges = {name: set() for name in files}
	for name, (_, undefined) in files.items():
		for sym in undefined:
			target = owner.get(sym)
			if target is not None and target != name:
				edges[name].add(target)
	return edges


def components(edges):
	"""Strongly connected components (Tarjan's algorithm, iterative), callees before callers."""
	index, low, on_stack, stack, result = {}, {}, set(), [], []
	counter = [0]
	for root in sorted(edges):
		if root in index:
			continue
		work = [(root, iter(sorted(edges[root])))]
		index[root] = low[root] = counter[0]
		counter[0] += 1
		stack.append(root)
		on_stack.add(root)
		while work:
			node, children = work[-1]
			advanced = False
			for child in children:
				if child not in index:
					index[child] = low[child] = counter[0]
					counter[0] += 1
					stack.append(child)
					on_stack.add(child)
					work.append((child, iter(sorted(edges[child]))))
					advanced = True
					break
				if child in on_stack:
					low[node] = min(low[node], index[child])
			if advanced:
				continue
			work.pop()
			if work:
				low[work[-1][0]] = min(low[work[-1][0]], low[node])
			if low[node] == index[node]:
				comp = []
				while True:
					top = stack.pop()
					on_stack.discard(top)
					comp.append(top)
					if top == node:
						break
				result.append(sorted(comp))
	return result


def check_group(label, paths, report):
	"""Print the group's loops (and its layers with --report); return how many loops."""
	edges = edges_of(read_symbols(paths))
	comps = components(edges)
	loops = [c for c in comps if len(c) > 1]
	nedges = sum(len(v) for v in edges.values())
	print(f'{label}: {len(edges)} files, {nedges} calling pairs, {len(loops)} loops')
	for comp in loops:
		inner = [f'{a} -> {b}' for a in comp for b in sorted(edges[a]) if b in comp]
		print(f'  loop: {", ".join(comp)}\n    ' + '\n    '.join(inner))
	if report:
		for layer, comp in enumerate(comps):
			print(f'  {layer:3d} {" ".join(comp)}')
	return len(loops)


def main(argv):
	report = '--report' in argv
	groups = [a for a in argv if a != '--report']
	if not groups:
		print(__doc__.strip().splitlines()[-5], file=sys.stderr)
		return 2
	loops = 0
	for group in groups:
		label, _, paths = group.partition('=')
		loops += check_group(label, paths.split(','), report)
	return 1 if loops else 0


if __name__ == '__main__':
	sys.exit(main(sys.argv[1:]))
