#!/usr/bin/env python3
"""source_map.py [SRCDIR]: docs/ARCHITECTURE.md's map of the source tree, from each file's first comment.

Every C, C++, CUDA and header file under daemon/, client/lib, client/tools, client/bench, common/ and
include/ opens with "/* name: what it is. */"; this prints one markdown table per folder with that line,
so the map is written from the files themselves (tests/unit/test_docs_files.sh checks the page names
every file).  Run it after adding or renaming a file and paste its output under "Where things live".
"""
import os
import re
import sys

FOLDERS = ['daemon', 'daemon/backend', 'daemon/backend/cpu', 'daemon/backend/cuda', 'common', 'include',
    'client/lib', 'client/tools', 'client/bench']
SUFFIXES = ('.c', '.h', '.cc', '.cu')


def first_comment(path):
    """The text of the file's opening comment, up to its first sentence's end, on one line."""
    text = open(path, encoding='utf-8', errors='replace').read(4000)
    m = re.match(r'\s*/\*(.*?)\*/', text, re.S)
    if not m:
        return ''
    body = ' '.join(line.strip().lstrip('*').strip() for line in m.group(1).splitlines()).strip()
    name = os.path.basename(path)
    if body.startswith(name + ':'):
        body = body[len(name) + 1:].strip()
    cut = re.search(r'(?<=[a-z0-9)\]])\.(\s|$)', body)
    return (body[:cut.start() + 1] if cut else body).replace('|', '\\|')


def main(argv):
    src = argv[1] if len(argv) > 1 else '.'
    for folder in FOLDERS:
        d = os.path.join(src, folder)
        if not os.path.isdir(d):
            continue
        files = sorted(f for f in os.listdir(d) if f.endswith(SUFFIXES))
        if not files:
            continue
        print(f'\n**`{folder}/`**\n\n| file | what |\n| --- | --- |')
        for f in files:
            print(f'| `{f}` | {first_comment(os.path.join(d, f))} |')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
