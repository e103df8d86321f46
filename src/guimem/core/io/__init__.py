"""Reading and writing files: the one atomic writer, and readers that name the file of bad bytes.

Every file and folder guimem saves goes through this package, so a crash at any instant leaves
the old or the new version readable, never half of one, and a save never destroys what it did
not write; every file of outside data is read through it, so a bad one is a
:class:`~guimem.core.data.DataError` naming the file and the field.

- :mod:`~guimem.core.io.write`: atomic file writes (bytes, text, JSON, JSON lines, a stage's
  metrics and results);
- :mod:`~guimem.core.io.folders`: atomic folder saves stamped with their kind, saves of several
  folders as one (a journal is the commit point), :func:`readable_dir`, which finds what the
  last committed save left, and :func:`read_whole`, which reads it as one version while saves go on;
- :mod:`~guimem.core.io.read`: JSON readers, finite and range checks, path confinement, ``.npy``
  and safetensors headers checked before their data is read.
"""

from guimem.core.io.folders import (
    MARKER,
    FolderWrite,
    atomic_write_dir,
    atomic_write_dirs,
    finish_transactions,
    folder_kind,
    read_whole,
    readable_dir,
)
from guimem.core.io.read import (
    MAX_JSON_DEPTH,
    check_finite,
    check_number,
    check_safetensors,
    file_inside,
    json_depth,
    parse_json,
    read_json,
    read_jsonl,
    read_npy,
    read_text,
    refuse_overlap,
    relative_path,
    safetensors_header,
)
from guimem.core.io.write import (
    atomic_write_bytes,
    atomic_write_text,
    json_text,
    saving,
    unwritable,
    write_json,
    write_jsonl,
    write_metrics,
    write_stage_results,
)

__all__ = [
    "MARKER", "MAX_JSON_DEPTH", "FolderWrite", "atomic_write_bytes", "atomic_write_dir", "atomic_write_dirs",
    "atomic_write_text", "check_finite", "check_number", "check_safetensors", "file_inside", "finish_transactions",
    "folder_kind",
    "json_depth", "json_text", "parse_json", "read_json", "read_jsonl", "read_npy", "read_text",
    "read_whole", "readable_dir",
    "refuse_overlap", "relative_path", "safetensors_header", "saving", "unwritable", "write_json", "write_jsonl",
    "write_metrics", "write_stage_results",
]
