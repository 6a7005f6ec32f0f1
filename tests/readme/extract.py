# SPDX-License-Identifier: Apache-2.0
"""The code blocks of README.md that are programs, for the readme.* tests
(tests/readme/README.md says how a block is marked).

    extract.py README.md KIND FOLDER   writes each block marked
        `<!-- test: KIND -->` to FOLDER/block<N>.<extension> (N counts from 1
        in the README's order) and prints their paths; fails when there is
        none.
    extract.py README.md --check       fails, naming the lines, when a code
        block in a program's language (c, python, go, java, csharp) carries
        neither a test marker nor a `<!-- fragment: why -->` one, when a
        marker is not followed by a code block, or when a shell block runs
        a command through sudo (a root shell, a container or a CI runner,
        often has none: scripts/common.sh's as_root uses sudo only where
        it is needed and there)."""

import pathlib
import re
import sys

# A marker's kind -> the fence's language and the extracted file's extension.
KINDS = {"c": ("c", "c"), "cpp": ("cpp", "cpp"), "python": ("python", "py"), "dask": ("python", "py"), "go": ("go", "go"),
         "java": ("java", "java"), "csharp": ("csharp", "cs")}
PROGRAM_LANGUAGES = {language for language, _ in KINDS.values()}
MARKER = re.compile(r"<!-- (?:test: (?P<kind>[a-z]+)|fragment: .+) -->")
FENCE = re.compile(r"```(?P<language>[A-Za-z0-9_+-]*)\s*")


def blocks(text):
    """(line, marker kind or "fragment" or None, fence language, body) of each fenced block."""
    lines = text.splitlines()
    marker, marker_line, index = None, 0, 0
    while index < len(lines):
        line = lines[index]
        found = MARKER.fullmatch(line.strip())
        if found:
            if marker is not None:
                raise SystemExit(f"README.md:{marker_line}: a marker with no code block after it")
            marker, marker_line = found.group("kind") or "fragment", index + 1
        elif FENCE.fullmatch(line.strip()):
            language = FENCE.fullmatch(line.strip()).group("language")
            end = index + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            yield index + 1, marker, language, "\n".join(lines[index + 1:end]) + "\n"
            marker, index = None, end
        elif line.strip() and marker is not None:
            raise SystemExit(f"README.md:{marker_line}: a marker must be followed directly by its code block")
        index += 1
    if marker is not None:
        raise SystemExit(f"README.md:{marker_line}: a marker with no code block after it")


def check(text):
    problems = []
    for line, marker, language, body in blocks(text):
        if marker is None and language in PROGRAM_LANGUAGES:
            problems.append(f"README.md:{line}: a {language} block with no <!-- test: KIND --> "
                            "or <!-- fragment: why --> marker before it")
        elif marker not in (None, "fragment"):
            if marker not in KINDS:
                problems.append(f"README.md:{line}: unknown test kind {marker!r} (known: {', '.join(KINDS)})")
            elif KINDS[marker][0] != language:
                problems.append(f"README.md:{line}: a {language!r} block marked as {marker!r}")
        if language in ("sh", "bash", "console"):
            for offset, command in enumerate(body.splitlines(), start=1):
                if re.match(r"\s*(\$\s*)?sudo\s", command):
                    problems.append(f"README.md:{line + offset}: a command run through sudo, which a root shell "
                                    "may lack: write it so that it works as pasted both as root and with sudo")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


def main(argv):
    text = pathlib.Path(argv[1]).read_text(encoding="utf-8")
    if argv[2:] == ["--check"]:
        status = check(text)
        if status == 0:
            print("every program block of README.md is marked, and no command runs through sudo")
        return status
    kind, folder = argv[2], pathlib.Path(argv[3])
    if kind not in KINDS:
        raise SystemExit(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for _, marker, _, body in blocks(text):
        if marker == kind:
            count += 1
            path = folder / f"block{count}.{KINDS[kind][1]}"
            path.write_text(body, encoding="utf-8")
            print(path)
    if count == 0:
        raise SystemExit(f"README.md has no block marked <!-- test: {kind} -->")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
