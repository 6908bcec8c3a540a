#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tutorial_check.py: the tutorial's terminal sessions, run and compared.

  tutorial_check.py extract DIR LESSON.md...   one script per session
  tutorial_check.py compare DIR                 what they printed vs the text

A lesson shows what to type and what comes back in fenced blocks marked
```console: a line starting with "$ " is a command (a trailing "\\"
continues it on the next line), the lines after it until the next command
are what it prints.  In the expected text, "..." within a line matches any
run of characters and a line that is only "..." matches any number of
lines; trailing blanks are ignored.  A command ending in "&" runs in the
background (its output is not compared: send it to a file).  Every other
command must exit 0.  Each block runs as one bash session, in order, so
a block can `cd`, set variables and `wait` for its background jobs.
Blocks marked ```console-norun are shown to the reader and not run.

extract writes DIR/NNN.sh (the session, each command's output and status
recorded in DIR/NNN.out.K / NNN.rc.K) and DIR/NNN.json (the expected
text, and where it came from); the caller runs each script as it likes
(as the ordinary user, bounded in time); compare then prints one line per
command, "ok" or "FAIL" with the difference, and exits 1 on any FAIL.
"""
import json
import os
import re
import shlex
import sys


def blocks(path):
    """(first line number, lines) of each ```console block of a file."""
    out, cur, start = [], None, 0
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if cur is None:
                if line.strip() == "```console":
                    cur, start = [], n + 1
            elif line.strip() == "```":
                out.append((start, cur))
                cur = None
            else:
                cur.append(line)
    return out


def commands(lines):
    """[(command, [expected lines])] of one block."""
    cmds, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            raise ValueError("text before the first command: %r" % line)
        cmd = line[2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + "\n" + lines[i]
        i += 1
        exp = []
        while i < len(lines) and not lines[i].startswith("$ "):
            exp.append(lines[i])
            i += 1
        cmds.append((cmd, exp))
    return cmds


def script(name, cmds):
    """The bash session of one block."""
    s = ["#!/bin/bash", "cd \"$TUTORIAL_HOME\" || exit 1"]
    for k, (cmd, _) in enumerate(cmds):
        out = shlex.quote("%s.out.%d" % (name, k))
        rc = shlex.quote("%s.rc.%d" % (name, k))
        if cmd.rstrip().endswith("&"):
            s.append(cmd)
            s.append("echo 0 > \"$TUTORIAL_DIR\"/%s" % rc)
        else:
            s.append("{\n%s\n} > \"$TUTORIAL_DIR\"/%s 2>&1" % (cmd, out))
            s.append("echo $? > \"$TUTORIAL_DIR\"/%s" % rc)
    s.append("wait")
    return "\n".join(s) + "\n"


def extract(d, lessons):
    n = 0
    for path in lessons:
        for start, lines in blocks(path):
            name = "%03d" % n
            cmds = commands(lines)
            with open(os.path.join(d, name + ".sh"), "w") as f:
                f.write(script(name, cmds))
            with open(os.path.join(d, name + ".json"), "w") as f:
                json.dump({"file": path, "line": start,
                           "commands": cmds}, f)
            n += 1
    print(n)


def line_re(exp):
    parts = [re.escape(p) for p in exp.rstrip().split("...")]
    return re.compile("^" + ".*".join(parts) + "$")


def matches(exp, got):
    """Whether the lines got fit the expected lines (with "..." lines)."""
    if not exp:
        return not got
    if exp[0].strip() == "...":
        return any(matches(exp[1:], got[i:]) for i in range(len(got) + 1))
    return bool(got) and bool(line_re(exp[0]).match(got[0].rstrip())) \
        and matches(exp[1:], got[1:])


def compare(d):
    fails = 0
    for js in sorted(f for f in os.listdir(d) if f.endswith(".json")):
        name = js[:-5]
        with open(os.path.join(d, js)) as f:
            meta = json.load(f)
        where = "%s:%d" % (meta["file"], meta["line"])
        for k, (cmd, exp) in enumerate(meta["commands"]):
            show = cmd.splitlines()[0]
            try:
                with open(os.path.join(d, "%s.rc.%d" % (name, k))) as f:
                    rc = int(f.read().strip() or -1)
            except OSError:
                rc = None
            if cmd.rstrip().endswith("&"):
                got = []
            else:
                try:
                    with open(os.path.join(d, "%s.out.%d" % (name, k))) as f:
                        got = f.read().splitlines()
                except OSError:
                    got = None
            if rc is None or got is None:
                print("FAIL  %s: `%s` did not run" % (where, show))
                fails += 1
            elif rc != 0:
                print("FAIL  %s: `%s` exited %d" % (where, show, rc))
                for line in got[:40]:
                    print("#     | " + line)
                fails += 1
            elif not matches(exp, got):
                print("FAIL  %s: `%s` printed other text" % (where, show))
                for line in exp:
                    print("#     want | " + line)
                for line in got[:60]:
                    print("#     got  | " + line)
                fails += 1
            else:
                print("ok    %s: `%s`" % (where, show))
    return 1 if fails else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3:])
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "compare":
        return compare(sys.argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
