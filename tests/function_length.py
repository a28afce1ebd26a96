#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (no function over 120 lines).

  function_length.py [--max N] [--warn-only] FOLDER_OR_FILE...
  function_length.py --self-test      check the heuristic on made-up sources

Scans every .cpp file under the given folders (or the files given) and prints
`path:line: name: N lines` for each function whose definition spans more than N lines
(default 120), from the first line of its header to its closing brace. Exit status 1 when
one is found, 0 with --warn-only (report, do not fail) or when none is.

A heuristic, good enough for this codebase's style: comments, string and character
literals (raw strings included) and preprocessor lines are blanked out; then a `{` opens a
function when it sits directly in a namespace or class scope and the text since the
previous `;`, `{` or `}` contains a parameter list and is neither a type, a namespace, an
initializer (`= {`) nor a control statement. Lambdas and local blocks count toward the
function they are in; TEST_CASE bodies count as functions.
"""
import argparse
import pathlib
import re
import sys

CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|try|return)\b")
TYPE_SCOPE = re.compile(r"\b(class|struct|union|enum)\b")
NAMESPACE = re.compile(r"^(inline\s+)?namespace\b|^extern\s+\"C\"")


def strip(text):
    """The text with comments, literals and preprocessor lines replaced by blanks (newlines
    kept, so that line numbers stay)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#" :
            # Preprocessor directive, with backslash continuations.
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                i += 1
            continue
        if c == "\n":
            out.append("\n")
            line_start = True
            i += 1
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(', text[i:i + 24])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:end]))
            i = end
            continue
        if c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def function_name(header):
    """The qualified name before the parameter list ("Topology::fabric", "TEST_CASE")."""
    depth = 0
    for k in range(len(header)):
        if header[k] == "(" and depth == 0:
            m = re.search(r"([~\w:]+(?:operator\s*\S+?)?)\s*(<[^()]*>)?\s*$", header[:k])
            if m:
                return m.group(1)
        if header[k] == "<":
            depth += 1
        elif header[k] == ">" and depth > 0:
            depth -= 1
    return header.strip().split("(")[0].split()[-1] if header.strip() else "?"


def long_functions(path, limit):
    return long_functions_in(path.read_text(encoding="utf-8", errors="replace"), limit)


def long_functions_in(source, limit):
    """(first line, name, lines) of each function of `source` longer than `limit` lines."""
    text = strip(source)
    found = []
    scopes = []  # "namespace", "type", "function" or "block", with start line for functions
    header, header_line = "", None
    line = 1
    for k, c in enumerate(text):
        if c == ":" and header.strip() in ("public", "private", "protected") and text[k + 1:k + 2] != ":":
            header, header_line = "", None  # an access specifier is not part of the header
            continue
        if c == "\n":
            line += 1
            header += " "
            continue
        if c in ";{}":
            if c == "{":
                h = " ".join(header.split())
                outer = scopes[-1][0] if scopes else "namespace"
                if outer in ("namespace", "type"):
                    if NAMESPACE.search(h) or not h:
                        kind = "namespace" if h else "block"
                    elif "(" in h and ")" in h and not h.endswith("=") and not CONTROL.search(h) \
                            and not TYPE_SCOPE.match(h.split("(")[0].strip()) \
                            and not re.search(r"=\s*$", h):
                        kind = "function"
                    elif TYPE_SCOPE.search(h.split("(")[0]) and "=" not in h:
                        kind = "type"
                    else:
                        kind = "block"
                else:
                    kind = "block"
                scopes.append((kind, header_line or line, function_name(h) if kind == "function" else ""))
            elif c == "}" and scopes:
                kind, start, fname = scopes.pop()
                if kind == "function" and line - start + 1 > limit:
                    found.append((start, fname, line - start + 1))
            header, header_line = "", None
            continue
        if header_line is None and not c.isspace():
            header_line = line
        header += c
    return found


def body(lines):
    return "".join(f"  x += {i};\n" for i in range(lines))


def self_test():
    """The rules the heuristic keeps, each on a made-up source; returns the failures."""
    cases = [
        ("a function of exactly the limit is not listed",
         "int f() {\n" + body(8) + "}\n", 10, []),
        ("one line over the limit is listed, header line to closing brace",
         "int f() {\n" + body(9) + "}\n", 10, [(1, "f", 11)]),
        ("a multi-line header counts from its first line",
         "int\nf(int a,\n  int b) {\n" + body(7) + "}\n", 10, [(1, "f", 11)]),
        ("braces in strings, raw strings, characters and comments do not count",
         'int f() {\n  s = "{{{";\n  r = R"x({ "a": {} )x";\n  c = \'{\';\n  // }\n  /* } */\n}\n'
         "int g() {\n" + body(12) + "}\n", 10, [(8, "g", 14)]),
        ("lambdas and blocks belong to the function they are in",
         "void f() {\n  auto l = [&]() {\n" + body(5) + "  };\n  if (x) {\n" + body(5) + "  }\n}\n", 10,
         [(1, "f", 16)]),
        ("members of a class and of namespaces are functions; the class is not",
         "namespace a {\nclass C {\n public:\n  void m() const {\n" + body(10) + "  }\n};\n}  // namespace a\n",
         10, [(4, "m", 12)]),
        ("an initializer at namespace scope is not a function",
         "const int t[] = {\n" + "".join(f"  {i},\n" for i in range(20)) + "};\n", 10, []),
        ("a qualified name and a constructor's initializer list",
         "Topology::Topology(int a) : a_(a) {\n" + body(11) + "}\n", 10, [(1, "Topology::Topology", 13)]),
    ]
    failures = []
    for rule, source, limit, expected in cases:
        got = long_functions_in(source, limit)
        ok = got == expected
        print(f"{'ok  ' if ok else 'FAIL'} {rule}" + ("" if ok else f": expected {expected}, got {got}"))
        if not ok:
            failures.append(rule)
    return failures


def main():
    if sys.argv[1:] == ["--self-test"]:
        return 1 if self_test() else 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=120, help="longest allowed function, lines")
    ap.add_argument("--warn-only", action="store_true", help="list long functions, exit 0")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    files = []
    for p in map(pathlib.Path, args.paths):
        if p.is_dir():
            files += sorted(p.rglob("*.cpp"))
        elif p.is_file():
            files.append(p)
        else:
            print(f"function_length.py: no such file or folder: {p}", file=sys.stderr)
            return 2
    count = 0
    for f in files:
        for start, fname, lines in long_functions(f, args.max):
            print(f"{f}:{start}: {fname}: {lines} lines (over {args.max})")
            count += 1
    print(f"{count} function(s) over {args.max} lines in {len(files)} file(s)"
          + (" (warn only)" if args.warn_only and count else ""))
    return 1 if count and not args.warn_only else 0


if __name__ == "__main__":
    sys.exit(main())
