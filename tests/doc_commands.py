#!/usr/bin/env python3
"""Runs the commands of the README and the guides in docs/ as a reader would copy them.

Every ```sh block is run, in file order, by `bash -euo pipefail` in the repository root (after
the README's first command has built build/); every ```c block that holds a `main(` is compiled
against the build tree and run. A block may be marked by an HTML comment on the line before its
fence:
  <!-- doc-test: skip (why) -->        never run (a long benchmark, something no CI machine has)
  <!-- doc-test: ci-only (why) -->     run only where CI=true (it changes the machine: installs)
Prints one line per block and `N passed, N failed, N skipped` last; exits 1 if any failed.

  tests/doc_commands.py [--show] [FILE.md ...]
      default files: README.md and docs/*.md (docs/notes/ is history: not run); --show prints
      every block's output, to paste into the ```text block after it.
"""
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK_TIMEOUT_S = 180
MARK = re.compile(r'^<!--\s*doc-test:\s*(skip|ci-only)\b(.*?)-->\s*$')
FENCE = re.compile(r'^(\s*)```\s*([A-Za-z0-9_+-]*)\s*$')


def blocks(path):
    """Yields (line, language, text, mark) for each fenced block of a Markdown file."""
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i
        mark = None
        j = start - 1
        while j >= 0 and lines[j].strip() == '':
            j -= 1
        if j >= 0:
            mm = MARK.match(lines[j].strip())
            if mm:
                mark = mm.group(1)
        body = []
        i += 1
        while i < len(lines) and not re.match(r'^\s*```\s*$', lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        yield start + 1, lang, '\n'.join(body) + '\n', mark


def run(cmd, **kw):
    """Runs cmd in its own process group; on a timeout the whole group is killed."""
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True, **kw)
    try:
        out, _ = p.communicate(timeout=BLOCK_TIMEOUT_S)
        return p.returncode, out.decode('utf-8', 'replace')
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return 124, out.decode('utf-8', 'replace') + '\n(timed out after %d s)' % BLOCK_TIMEOUT_S


def run_c(text, workdir, name):
    src = os.path.join(workdir, name + '.c')
    exe = os.path.join(workdir, name)
    with open(src, 'w') as f:
        f.write(text)
    build = os.path.join(ROOT, 'build')
    status, out = run(['cc', '-std=c11', '-Wall', '-Wextra', '-Werror',
                       '-I' + os.path.join(ROOT, 'include'), '-I' + build, src, '-o', exe,
                       '-L' + os.path.join(build, 'src'), '-lzxsampler', '-lpthread',
                       '-Wl,-rpath,' + os.path.join(build, 'src')])
    if status != 0:
        return status, 'compile: ' + out
    return run([exe], env=dict(os.environ, ZXS_DOC_TEST='1'))


def main(argv):
    show = '--show' in argv[1:]
    files = [a for a in argv[1:] if a != '--show']
    files = files or (['README.md'] + sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md'))))
    ci = os.environ.get('CI') == 'true'
    passed = failed = skipped = 0
    workdir = tempfile.mkdtemp(prefix='zxs-doc-commands.')
    for path in files:
        full = path if os.path.isabs(path) else os.path.join(ROOT, path)
        for line, lang, text, mark in blocks(full):
            where = '%s:%d' % (path, line)
            if lang in ('sh', 'bash', 'shell'):
                kind = 'sh'
            elif lang == 'c' and re.search(r'\bmain\s*\(', text):
                kind = 'c'
            else:
                continue
            if mark == 'skip' or (mark == 'ci-only' and not ci):
                print('skip %s (%s)' % (where, 'marked skip' if mark == 'skip' else 'CI only'))
                skipped += 1
                continue
            if kind == 'sh':
                script = os.path.join(workdir, 'block-%d.sh' % (passed + failed + skipped))
                with open(script, 'w') as f:
                    f.write(text)
                status, out = run(['bash', '-euo', 'pipefail', script])
            else:
                status, out = run_c(text, workdir, 'block%d' % (passed + failed + skipped))
            if show:
                print('     > ' + '\n     > '.join(out.rstrip('\n').split('\n')))
            if status == 0:
                print('ok   %s' % where)
                passed += 1
            else:
                print('FAIL %s: exit %d' % (where, status))
                print('     | ' + '\n     | '.join(text.rstrip('\n').split('\n')))
                print('     output (last 30 lines):')
                print('     > ' + '\n     > '.join(out.rstrip('\n').split('\n')[-30:]))
                failed += 1
            sys.stdout.flush()
    print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
