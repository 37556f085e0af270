"""What the source artifact Flux builds from leaves out of the checkout: source-controller packs the repository without
the paths its .sourceignore files exclude (the root's, and one in any directory for the paths below it) and without
symlinks. A file kustomize cannot find in the artifact while the checkout has it is left out by one of these; the gate
names which, where it can tell."""
from __future__ import annotations

from pathlib import Path

IGNORE_FILE = ".sourceignore"


def symlinked(root: Path, path: Path) -> Path | None:
    """The first symlink on the way from `root` to `path` (the path itself included), which the artifact does not hold."""
    root = root.absolute()
    current = root
    for part in path.absolute().relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            return current
    return None


def ignore_files(root: Path, path: Path) -> list[Path]:
    """The .sourceignore files whose patterns apply to `path`: the root's and those of the directories above it."""
    root = root.absolute()
    found, current = [], root
    for part in (None, *path.absolute().relative_to(root).parts[:-1]):
        current = current / part if part else current
        if (current / IGNORE_FILE).is_file():
            found.append(current / IGNORE_FILE)
    return found


def pattern_line(ignore: Path, rel: str) -> int | None:
    """The line of the last pattern of `ignore` that names `rel` (relative to the file's directory) or a directory above
    it, as written: `/a/b/`, `a/b`, `b`; None when no pattern names it so plainly (a wildcard does)."""
    parts = rel.strip("/").split("/")
    names = {"/".join(parts[:i]) for i in range(1, len(parts) + 1)} | set(parts)
    try:
        lines = ignore.read_text(errors="replace").splitlines()
    except OSError:
        return None
    hits = [i for i, line in enumerate(lines, 1) if line.strip() and not line.startswith(("#", "!")) and line.strip().strip("/") in names]
    return hits[-1] if hits else None


def left_out(root: Path, path: Path) -> tuple[str, str, str | None, int | None] | None:
    """(why, fix, file, line) for a path of the checkout that the artifact does not hold; None when neither a symlink nor
    a .sourceignore file on its way can be the cause."""
    link = symlinked(root, path)
    if link is not None:
        rel = link.absolute().relative_to(root.absolute()).as_posix()
        return (f"{rel} is a symlink, and the artifact source-controller packs holds no symlinks, so Flux never sees it",
                f"replace the symlink {rel} by the file (or directory) itself", None, None)
    for ignore in reversed(ignore_files(root, path)):
        rel = path.absolute().relative_to(ignore.parent.absolute()).as_posix()
        line = pattern_line(ignore, rel)
        where = ignore.relative_to(root.absolute()).as_posix()
        if line is not None:
            return (f"{where}:{line} leaves it out of the artifact source-controller packs, so Flux never sees it",
                    f"remove or narrow that pattern (or add `!{rel}` after it)", where, line)
    files = [i.relative_to(root.absolute()).as_posix() for i in ignore_files(root, path)]
    return (f"a pattern of {' or '.join(files)} leaves it out of the artifact source-controller packs, so Flux never sees it",
            "remove or narrow the pattern that matches it (the last pattern that matches a path decides)", None, None) if files else None
