"""Records and comparisons on disk: versioned JSON, sorted keys, written atomically, never
overwritten (the layout: results/README.md).

    files.py        the one safe way to write: temp file, fsync, link; directories claimed by mkdir
    records.py      run records: RefRun <-> a JSON header, save, load, and the reuse of a matching
                    record (and the JSON records of schema_version 1, still read)
    sidecar.py      a record's answers as numpy columns in the .npz beside its header, checked
    comparisons.py  a comparison's directory: comparison.json, the run records, and the pages
                    `harness.report.saved` rendered for it
    document.py     the Comparison as a schema-versioned JSON document, and back (pure)
    cache.py        comparisons read back by the key of their inputs; computed by the caller
    export.py       a run record as a TREC run file or a per-query table (`harness export`)

Stores, never renders or decides: a comparison is computed by the verdict stage and its pages by
the report stage; results writes what they hand it.

In: RefRun and Comparison values. Out: files under the results directory, and the same values
read back.
"""
