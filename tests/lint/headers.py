#!/usr/bin/env python3
"""Headers that stay true: each prototype in src/*.h sits under the
section of the file that defines it.

A header groups its prototypes under section comments that name their
files, at the start of the comment ("/* reload.c */", "/* slot.c: a
slot's life */") or anywhere in a "----" rule ("/* ---- buf.c: growable
byte buffers ---- */", "/* ---- failed.c and requeue.c: ... ---- */",
"/* ---- the tree a file becomes (config_yaml.c) ---- */"); a name may be
a pattern ("config_*.c").  A prototype is a declaration at file scope
that names a function; its definition is the line of src/*.c that begins
with its name and "(", as the code's style writes every function.

Prints each prototype whose definition is in no file of its section, or
nowhere, and exits 1 if there is any.  Usage: headers.py [SRC_DIR]
"""
import fnmatch
import glob
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")

RULE = re.compile(r"^/\* ---- (.*) ---- \*/\s*$")
LEAD = re.compile(r"^/\* ([A-Za-z0-9_*]+\.c\b.*?) ?\*/\s*$")
FILES = re.compile(r"[A-Za-z0-9_*]+\.c\b")


def definitions():
    found = {}
    for c in glob.glob(os.path.join(src, "*.c")):
        with open(c, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^([a-z_][a-z0-9_]*)\(", line)
                if m:
                    found.setdefault(m.group(1), []).append(
                        os.path.basename(c))
    return found


def blank(m):
    """A comment or directive replaced by its newlines only."""
    return "\n" * m.group(0).count("\n")


def declarations(text):
    """(line, text) of each statement at file scope ending in ';'."""
    text = re.sub(r"/\*.*?\*/", blank, text, flags=re.S)
    text = re.sub(r"^#(?:[^\n]*\\\n)*[^\n]*", blank, text, flags=re.M)
    depth, line, start, cur = 0, 1, 1, []
    for ch in text:
        if ch == "\n":
            line += 1
        if depth == 0 and not cur and ch.isspace():
            continue
        if depth == 0 and not cur:
            start = line
        cur.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            yield start, " ".join("".join(cur).split())
            cur = []


def sections(lines):
    """Line number -> the file patterns its section comment names."""
    out = {}
    for n, line in enumerate(lines, 1):
        m = RULE.match(line) or LEAD.match(line)
        if m and FILES.findall(m.group(1)):
            out[n] = FILES.findall(m.group(1))
    return out


def main():
    defined = definitions()
    problems = 0
    for h in sorted(glob.glob(os.path.join(src, "*.h"))):
        with open(h, encoding="utf-8") as f:
            text = f.read()
        marks = sections(text.split("\n"))
        rel = "src/" + os.path.basename(h)
        for line, decl in declarations(text):
            if decl.startswith(("typedef", "struct", "enum", "union",
                                "extern")) or "(*" in decl:
                if not re.match(r"^(struct|enum|union) [a-z_0-9]+ *\*?"
                                r" *[a-z_0-9]+\(", decl):
                    continue
            m = re.search(r"\b([a-z_][a-z0-9_]*)\s*\(", decl)
            if not m:
                continue
            name = m.group(1)
            above = [n for n in marks if n < line]
            where = max(above) if above else None
            files = defined.get(name, [])
            if where is None:
                print(f"{rel}:{line}: {name}: under no section that "
                      f"names its file")
            elif not files:
                print(f"{rel}:{line}: {name}: declared, defined nowhere")
            elif not any(fnmatch.fnmatch(d, p) for d in files
                         for p in marks[where]):
                print(f"{rel}:{line}: {name}: defined in "
                      f"{', '.join(sorted(set(files)))}, but under the "
                      f"section of {', '.join(marks[where])} (line "
                      f"{where})")
            else:
                continue
            problems += 1
    return 1 if problems else 0


sys.exit(main())
