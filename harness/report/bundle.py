"""plotly.js written once per folder, for the HTML pages saved there to load by a relative path.

    plotly_beside(folder) -> str     folder/plotly-<version>.min.js written unless it is there
                                     (with the same bytes); its file name returned

Every saved report.html used to inline the 4.8 MB bundle; now results/<stamp>/report.html says
`<script src="../plotly-<version>.min.js">` and a page written with `--output FILE` has the
bundle copied beside FILE.  The name carries plotly.js's version, so pages written by two versions
into one folder each load their own; the file is written atomically (a reader never sees half
of it), and a stale or damaged copy of that name is replaced, never trusted.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from importlib import resources
from pathlib import Path

from harness.errors import ResultsError
from harness.report.plotting import plotly_file


def _shipped() -> bytes:
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()


def plotly_beside(folder: Path) -> str:
    """Make sure `folder` holds plotly.js under `plotly_file()`; return that name."""
    name = plotly_file()
    target = folder / name
    data = _shipped()
    try:
        if target.stat().st_size == len(data) and target.read_bytes() == data:
            return name
    except OSError:
        pass  # absent (or unreadable): written below
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".tmp-{os.getpid()}-", suffix=".js")
    except OSError as exc:
        raise ResultsError(
            f"{target}: cannot write plotly.js beside the page: {exc.strerror or exc}",
            ["free some space or choose a folder you can write to"],
        ) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            mask = os.umask(0)
            os.umask(mask)
            os.fchmod(f.fileno(), 0o666 & ~mask)  # shared like the pages, not mkstemp's 0600
            os.fsync(f.fileno())
        os.replace(tmp, target)  # two writers of the same bytes: either one wins
    except OSError as exc:
        raise ResultsError(
            f"{target}: cannot write plotly.js beside the page: {exc.strerror or exc}",
            ["free some space or choose a folder you can write to"],
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return name
