"""File analysis: what a file on local disk is (by its content, never its claimed type) and what is in it.

``analyze`` streams the file with memory bounded whatever its size, never raises for bad content (a partial
result and warnings instead), and returns an ``Analysis`` whose summary is for the model, whose details are for
a widget, and whose text is for full-text indexing. ``compare`` lines several analyses up. Pure synchronous
code: callers run it in a worker.
"""

from app.features.files.analysis.compare import compare
from app.features.files.analysis.core import analyze
from app.features.files.analysis.model import KINDS, MAX_INDEX_CHARS, Analysis
from app.features.files.analysis.sniffing import sniff

__all__ = ["KINDS", "MAX_INDEX_CHARS", "Analysis", "analyze", "compare", "sniff"]
