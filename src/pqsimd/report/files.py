"""Report files are written atomically, through the store's one writer."""

from __future__ import annotations

from pathlib import Path

from ..store import atomic_write_bytes as write_bytes  # noqa: F401  (re-exported for report modules)
from ..store import atomic_write_text as write_text  # noqa: F401
from ..store import atomic_write_with

__all__ = ["write_bytes", "write_text", "save_figure", "save_formats"]


def save_figure(fig, path: Path, fmt: str, **kwargs) -> Path:
    kwargs.setdefault("bbox_inches", "tight")  # nothing drawn outside the canvas is cut off
    return atomic_write_with(Path(path), lambda f: fig.savefig(f, format=fmt, **kwargs))


def save_formats(fig, outdir: Path, name: str, dpi: int = 150) -> dict[str, Path]:
    """A matplotlib figure as name.png, .svg and .pdf in outdir (then closed): {ext: path}."""
    import matplotlib.pyplot as plt

    out = {ext: save_figure(fig, Path(outdir) / f"{name}.{ext}", ext, dpi=dpi) for ext in ("png", "svg", "pdf")}
    plt.close(fig)
    return out
