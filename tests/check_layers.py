#!/usr/bin/env python3
"""The house rules of docs/ARCHITECTURE.md, checked on the sources.

Each folder of src/ (each backend apart) is a room; tools/ is one more. A room may include the
headers of the rooms ALLOWED names for it, and only the core, the perfmon controller and the
backends call the backend contract (zxs_prim_* in src/core/platform.h): features ask the core
(src/core/process_facts.h). Every header name is unique across src/ and tools/, so an include
names one file. Prints each breach; exits 1 if there is any.

Usage: tests/check_layers.py [REPO]   (default: this file's repository)
"""
import os
import re
import sys

BACKEND = {'core', 'perfmon', 'util', 'backend/posix', 'backend/elf'}
ALLOWED = {
    'util': set(),
    'core': {'util'},
    'perfmon': {'core', 'util'},
    'backend/posix': {'core', 'util'},
    'backend/elf': {'core', 'util'},
    'backend/linux': BACKEND,
    'backend/macos': BACKEND,
    'backend/fuchsia': BACKEND,
    'backend/fake': BACKEND,
    'unwind': {'util'},
    'symbolize': {'core', 'util'},
    'trace': {'core', 'symbolize', 'util'},
    'export': {'trace', 'symbolize', 'util'},
    # The thread hook (recorder/thread_hook.h) serves the preload library too.
    'profiler': {'core', 'trace', 'export', 'recorder', 'util'},
    # recorder_fuchsia.c declares the kernel's calls through backend/fuchsia/zircon_syscalls.h.
    'recorder': {'core', 'trace', 'util', 'backend/fuchsia'},
    # The recording engine is Linux's: it records with the Linux backend's perf layer.
    'record': {'core', 'perfmon', 'backend/linux', 'unwind', 'symbolize', 'trace', 'util'},
    'tools': {'record'},
}
# Who may call the backend contract.
PRIM_CALLERS = {'core', 'perfmon'} | {r for r in ALLOWED if r.startswith('backend/')}


def room_of(rel):
    parts = rel.split('/')
    if parts[0] == 'tools':
        return 'tools'
    if parts[1] == 'backend':
        return 'backend/' + parts[2]
    return parts[1]


def sources(repo):
    for top in ('src', 'tools'):
        for folder, _, names in os.walk(os.path.join(repo, top)):
            for name in sorted(names):
                if name.endswith(('.c', '.h')):
                    yield os.path.relpath(os.path.join(folder, name), repo)


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    files = list(sources(repo))
    breaches = []
    homes = {}
    for rel in files:
        if rel.endswith('.h'):
            homes.setdefault(os.path.basename(rel), []).append(rel)
    for name, where in sorted(homes.items()):
        if len(where) > 1:
            breaches.append(f'{name}: more than one header of this name: {", ".join(where)}')
    for rel in files:
        room = room_of(rel)
        if room not in ALLOWED:
            breaches.append(f'{rel}: room {room} is not in the house plan (check_layers.py)')
            continue
        with open(os.path.join(repo, rel), encoding='utf-8') as f:
            text = f.read()
        for header in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, flags=re.M):
            where = homes.get(os.path.basename(header))
            if not where:
                continue  # generated (zxs_config.h) or the project's include/ headers
            target = room_of(where[0])
            if target != room and target not in ALLOWED[room]:
                breaches.append(f'{rel}: includes {header} of {target}, which {room} may not')
        if room not in PRIM_CALLERS:
            for call in sorted(set(re.findall(r'\b(zxs_prim_\w+)\s*\(', strip_comments(text)))):
                breaches.append(f'{rel}: calls the backend contract ({call}); ask process_facts.h')
    for line in breaches:
        print(line)
    print(f'{len(files)} files, {len(breaches)} breaches of the house rules')
    return 1 if breaches else 0


if __name__ == '__main__':
    sys.exit(main())
