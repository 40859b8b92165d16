"""Records and comparisons on disk: versioned JSON, sorted keys, written atomically, never
overwritten (the layout: results/README.md).

    files.py        the one safe way to write: temp file, fsync, link; directories claimed by mkdir
    records.py      run records: RefRun <-> a JSON header, save, load, and the reuse of a matching
                    record (and the JSON records of schema_version 1, still read)
    sidecar.py      a record's answers as numpy columns in the .npz beside its header, checked
    comparisons.py  a comparison's directory: comparison.json, report.md, the run records

In: RefRun and Comparison values. Out: files under the results directory, and the same values
read back.
"""
