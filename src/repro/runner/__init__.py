"""How the book is made (it runs kernels; it never imports core, p1, p2, workbench, models or data).

- ``notebooks``    ``book/_toc.yml`` discovery, the parameters cell, parameter validation and coercion
- ``execute``      the notebook cache key (scoped per paper), papermill in a fresh kernel, the worker pool
- ``watch``        progress lines while a notebook runs (cell, elapsed, estimate from the last run)
- ``claims_page``  the generated claims table
- ``build``        staging ``book/executed``, the claims page and build info, jupyter-book
- ``cli``          the ``repro`` command line
"""
