"""The course in a browser tab (issue 34): the site builder (site.py), the files it fetches for an
offline copy (fetch.py), the cells and what runs them in Pyodide (cells.py, runtime.py), the
page's template and scripts (static/)."""
