#!/usr/bin/python3
"""check_limit_messages.py — one post-sample size limit, with one message.

Every request is held to max_response_bytes by kernels/fs_limits.c alone:
the worst case before any work (fs_limits_check, fs_limits_check_typed) and
the result after sampling (fs_limits_check_result), which every host runs
through the executor (exec/fs_exec.h). This check reads the C sources and
fails when that stops being true:

1. Every message about a response's size (a string literal saying "response
   of", "response limit", "exceed(s) the limit" or "(max_response_bytes)")
   is in kernels/fs_limits.c.
2. The post-sample message ("... as drawn came to a response of ...") is
   written exactly once.
3. Code outside the files in CARRIERS never reads max_response_bytes: the
   limit is compared in kernels/fs_limits.c; the others only set it or pass
   it on (the command line, the config file, the unix:// handshake).

    /usr/bin/python3 tests/checks/check_limit_messages.py [--root REPO]
"""
import argparse
import os
import re
import sys

FOLDERS = ["kernels", "exec", "server", "client-lib", "proto", "dataset", "placement", "cli"]
CHECKS = "kernels/fs_limits.c"
POST_SAMPLE = "as drawn came to a response"
SIZE_WORDS = re.compile(r"response of|response limit|exceeds? the limit|\(max_response_bytes\)", re.I)
# Files whose code may name max_response_bytes, and why: a reviewed table.
CARRIERS = {
    "kernels/fs_limits.h": "declares the limit",
    "kernels/fs_limits.c": "the checks themselves",
    "cli/cli.h": "the option's documentation",
    "cli/cmd_serve.c": "--max-response-bytes into the server's limits",
    "cli/config.c": "the config file's limits.max_response_bytes",
    "server/local_welcome.c": "sends the limits to unix:// clients at connect",
    "client-lib/client_local.c": "takes them from the handshake",
}


def split_c(text):
    """(code without comments or literals, [literal contents]) of C text."""
    code, literals, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            code.append(" ")
        elif c in "\"'":
            j, buf = i + 1, []
            while j < n and text[j] != c:
                if text[j] == "\\":
                    buf.append(text[j:j + 2])
                    j += 2
                else:
                    buf.append(text[j])
                    j += 1
            if c == '"':
                literals.append("".join(buf))
            code.append(c + c)
            i = j + 1
        else:
            code.append(c)
            i += 1
    return "".join(code), literals


def sources(root):
    for folder in FOLDERS:
        for base, _, files in sorted(os.walk(os.path.join(root, folder))):
            for name in sorted(files):
                if name.endswith((".c", ".h", ".cu")):
                    path = os.path.join(base, name)
                    yield os.path.relpath(path, root), open(path, errors="replace").read()


def problems(root):
    found, post_sample = [], []
    for rel, text in sources(root):
        code, literals = split_c(text)
        for lit in literals:
            if SIZE_WORDS.search(lit) and rel != CHECKS:
                found.append(f"{rel}: a response-size message outside {CHECKS}: \"{lit}\"")
            if POST_SAMPLE in lit:
                post_sample.append(rel)
        if re.search(r"\bmax_response_bytes\b", code) and rel not in CARRIERS:
            found.append(f"{rel}: reads max_response_bytes; only {CHECKS} compares it (or add the file to "
                         "CARRIERS, saying why)")
    if post_sample != [CHECKS]:
        found.append(f"the post-sample message (\"{POST_SAMPLE}\") is written {len(post_sample)} times "
                     f"({', '.join(post_sample) or 'nowhere'}), not once in {CHECKS}")
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    args = p.parse_args()
    found = problems(args.root)
    for f in found:
        print("check_limit_messages:", f)
    print(f"check_limit_messages: {'FAILED' if found else 'ok'} ({len(found)} problems)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
