"""Render, computing nothing: a Comparison (or an Evaluation, a run summary) in, text out.

    page.py      render(comparison, fmt): text, Markdown and JSON, one renderer per format;
                 the `harness metrics` and `harness run` pages
    blocks.py    the comparison page as layout blocks, built once for text, Markdown and HTML
    layout.py    the block layout shared by every page (text and Markdown from one build)
    diagnosis.py errored answers by kind (statuses, a sample, advice) and the steps run
                 before the queries, as report lines
    twobytwo.py  the retrieval/generation 2x2 (`harness twobytwo`, and its compare section)
    html_page.py the comparison as one HTML page; figures.py its plots (plotly's JSON);
                 html_sections.py its floors, errored answers, 2x2 and prepare steps as tables
    plotting.py  what every plot is drawn with, plotly not imported: make_subplots' grid, the
                 <div> that draws a figure, plotly.js (inlined, or its file beside the pages)
    systems.py   the `harness compare-runs` page: every candidate at once, then each page

    bundle.py    plotly.js written once beside the saved pages (reads the plotly package)
    saved.py     save_comparison: the pages rendered and handed to results to write

Pure but bundle.py and saved.py: no file, clock or process; results/ writes what these return
(the JSON form is `harness.results.document`'s).
"""
