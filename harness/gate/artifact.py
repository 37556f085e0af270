"""What the source artifact Flux builds from leaves out of the checkout: source-controller packs the repository without
the paths its .sourceignore files exclude (the root's, and one in any directory for the paths below it) and without
symlinks. A file kustomize cannot find in the artifact while the checkout has it is left out by one of these; the gate
names which, where it can tell."""
from __future__ import annotations

import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from harness.gate.findings import Finding
from harness.gate.sources import kustomization_file

if TYPE_CHECKING:  # (render imports the configuration, which asks symlinked() of the configured paths)
    from harness.gate.render import Build

IGNORE_FILE = ".sourceignore"


def symlinked(root: Path, path: Path) -> Path | None:
    """The first symlink on the way from `root` to `path` (the path itself included), which the artifact does not hold; `path`
    is taken lexically (a/b/../c is a/c), as kustomize and Flux join paths inside the artifact."""
    root = root.absolute()
    current = root
    for part in Path(posixpath.normpath(path.absolute())).relative_to(root).parts:
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
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
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


def cluster_left_out(root: Path, rel: str, cluster: str) -> Finding | None:
    """kustomize-build at the symlink on the way to the cluster folder `rel`: the artifact holds none, so Flux finds no
    path ./<rel> and applies nothing of the cluster (the gate then checks nothing of it either); None without one. One
    symlink above several clusters' folders is one finding (the clusters merge, as repeats from other clusters do)."""
    link = symlinked(root, root / rel)
    if link is None:
        return None
    why, fix, _, _ = left_out(root, link)
    return Finding(link.absolute().relative_to(root.absolute()).as_posix(), None, "", "kustomize-build",
                   f"{why.removesuffix(', so Flux never sees it')}, so Flux finds no entry point of cluster {cluster} there, and "
                   "applies (and the gate checks) nothing of it", fix, f"cluster {cluster}")


def artifact_finding(root: Path, build: Build, entry: Path | None, file: str, line: int | None,
                     listings: Callable[[Path], list[tuple[str, int | None]]] = lambda link: []) -> Finding | None:
    """kustomize-build for a build that misses what the checkout has (`entry`: the file its error names, or the build's own
    directory): at the pattern, symlink or root .sourceignore line that leaves it out of the artifact; None otherwise. A
    symlink is reported at the first line that lists it (`listings`: where kustomization files list a path), naming the
    others, in words every build that meets it shares (one finding: keep_once joins the builds)."""
    if entry is not None and (entry.exists() or entry.is_symlink()) and "no such file" in build.error and (away := left_out(root, entry)):
        why, fix, at, at_line = away  # the checkout has it, the artifact Flux builds from does not
        link = symlinked(root, entry)
        if at is None and link is not None:
            listed = listings(link) or [(file, line)]
            where = f" (listed at {' and '.join(f'{f}:{n}' if n else f for f, n in listed)})" if len(listed) > 1 else ""
            return Finding(listed[0][0], listed[0][1], "", "kustomize-build",
                           f"kustomize finds no {link.absolute().relative_to(root.absolute()).as_posix()} in the artifact Flux builds from"
                           f"{where}, though the checkout has it: {why}", fix, build.id)
        return Finding(at or file, at_line if at else line, "", "kustomize-build", f"{build.error.strip()} — {why}"
                       + (f" (listed at {file}:{line})" if at else ""), fix, build.id)
    if kustomization_file(root / build.dir) is not None and f"evalsymlink failure on '{build.dir}'" in build.error:
        # The checkout has it and the build read none of it: the artifact source-controller packs leaves it out.
        away = left_out(root, root / build.dir)  # a nested .sourceignore's pattern, or a symlink on the way
        if away and away[2] and away[2] != ".sourceignore":
            return Finding(away[2], away[3], "", "kustomize-build", f"{build.error.strip()} — {build.dir}: {away[0]} (built from {file})",
                           away[1], build.id)
        if away and away[2] is None and "symlink" in away[0]:
            return Finding(file, line, "", "kustomize-build", f"{build.error.strip()} — {away[0]}", away[1], build.id)
        top = build.dir.split("/")[0]
        kept_at = line_of(root / ".sourceignore", f"!/{top}/")
        named_at = pattern_line(root / ".sourceignore", build.dir)
        if named_at and (not kept_at or named_at > kept_at):  # a later pattern naming the directory itself: the cause, at its line
            return Finding(".sourceignore", named_at, "", "kustomize-build",
                           f"{build.error.strip()} — .sourceignore:{named_at} leaves {build.dir} out of the artifact source-controller "
                           f"packs, so Flux never sees it (built from {file})", "remove or narrow that pattern"
                           + (f" (`!/{top}/` at .sourceignore:{kept_at} keeps it until that line: the last pattern that matches a "
                              "path decides)" if kept_at else ""), build.id)
        fix = (f"`!/{top}/` at .sourceignore:{kept_at} keeps it, but a pattern after that line leaves it out again (the last "
               "pattern that matches a path decides): remove or narrow that pattern") if kept_at else \
            (f"keep it in the artifact: add `!/{top}/` to .sourceignore (it lists what the artifact holds), or move it under "
             "a directory the artifact keeps")
        return Finding(file, line, "", "kustomize-build",
                       f"{build.error.strip()} — {build.dir} is in the checkout but not in the artifact source-controller packs: "
                       ".sourceignore (or the default exclusions) leaves it out, so Flux never sees it", fix, build.id)
    return None


def line_of(path: Path, text: str) -> int | None:
    """The number of the first line of `path` that is `text` (surrounding blanks aside); None when none is."""
    try:
        return next((i for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1) if line.strip() == text), None)
    except OSError:
        return None
